// Evaluates the `redis` check through the real /healthz route (runner, timeout, report) and
// returns its entry. The app must use HealthCheckDetailLevel.Full for description and data.
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { HealthStatus } from '@kit/core';

/** The `redis` entry of `/healthz?tag=ready`, after checking the HTTP status matches it. */
export async function evaluateRedisCheck(
  app: FastifyInstance,
): Promise<{ status: HealthStatus; description?: string; data?: Record<string, unknown> | null }> {
  const res = await app.inject('/healthz?tag=ready');
  const body = res.json<{
    status: HealthStatus;
    checks: Record<
      string,
      { status: HealthStatus; description?: string; data?: Record<string, unknown> | null }
    >;
  }>();
  const entry = body.checks.redis;
  assert.ok(entry, `/healthz?tag=ready has a redis check: ${res.body}`);
  assert.equal(res.statusCode, body.status === 'unhealthy' ? 503 : 200, res.body);
  assert.doesNotMatch(res.body, /redis:\/\//, 'no connection URL in the report');
  return entry;
}
