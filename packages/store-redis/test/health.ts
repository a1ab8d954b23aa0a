// Evaluates the registered `redis` check the way Kit's health runner does, for branches where the
// /healthz route is not available: with its name and tags, an AbortSignal that fires at its
// timeout, and a deadline that answers "Timed out" even if the check ignored the signal.
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { HealthCheckResult, IHealthCheck } from '@kit/core';

/** Evaluates the registered `redis` check the way the health runner does: with its tags, a timeout signal and a deadline. */
export async function evaluateRedisCheck(app: FastifyInstance): Promise<HealthCheckResult> {
  const registration = app.kit.healthChecks.registrations().find((r) => r.name === 'redis');
  assert.ok(registration, 'a check named redis is registered');
  const check = registration.check as IHealthCheck;
  const signal = AbortSignal.timeout(registration.timeoutMs);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<HealthCheckResult>((resolve) => {
    timer = setTimeout(() => resolve({ status: 'unhealthy', description: `Timed out after ${registration.timeoutMs} ms` }), registration.timeoutMs + 50);
  });
  try {
    return await Promise.race([check.checkHealth({ name: registration.name, tags: registration.tags, signal }), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
