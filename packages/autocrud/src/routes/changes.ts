// What a generated write tells the mapper about the request that caused it (the ChangeContext of
// mapper/changes.ts): its correlation id, its authenticated subject and its trace, and a callback
// that adds the number of changes it recorded to the request's audit entry (core's
// setAuditDetail). Built only for an entity whose writes are recorded: the others pay nothing,
// not even the correlation id, which core makes on this first read when the audit trail is off
// (a UUID, never Fastify's per-process `req-N` counter, which repeats after every restart).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { getRequestCorrelationId, setAuditDetail } from '@kit/core';
import { activeTraceId } from '@kit/core/extend';
import type { ChangeContext } from '../mapper/seam/changes.js';
import type { CallOptions } from '../mapper/repository.js';

/** The name of the audit entry's detail that counts the changes a request recorded. */
export const CHANGES_DETAIL = 'changes';

/** The request's `ChangeContext`. */
export function changeContextOf(request: FastifyRequest, reply: FastifyReply): ChangeContext {
  const sub = (request as { user?: { sub?: unknown } | null }).user?.sub;
  const traceId = activeTraceId();
  return {
    correlationId: getRequestCorrelationId(reply),
    ...(typeof sub === 'string' && sub !== '' ? { subject: sub } : {}),
    ...(traceId === undefined ? {} : { traceId }),
    committed: (count) => setAuditDetail(reply, CHANGES_DETAIL, count),
  };
}

/**
 * The options of a write: the call's own (its signal and, under authorization, the caller's
 * scope), with the request's ChangeContext when `recording`. Without it, `call` as it is.
 */
export function writeOptions<T extends CallOptions>(
  recording: boolean | undefined,
  request: FastifyRequest,
  reply: FastifyReply,
  call: T,
): T {
  return recording ? { ...call, changeContext: changeContextOf(request, reply) } : call;
}
