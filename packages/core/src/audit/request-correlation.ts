// Where a request's correlation id rides: on Node's request object under a symbol. The audit
// trail writes it for every request in its genReqId (hooks.ts): the id, or `null` on an excluded
// path. Without the audit trail nothing is written per request; the first read of a request that
// needs an id (a write AutoCrud records, a problem answer) makes one, from the same generator and
// with the same rule for an incoming header, and keeps it there. A request that never asks pays
// nothing: no hook, no id, no header.
import type { FastifyReply } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { correlationIdFrom } from './correlation.js';
import { newUuid } from './uuid.js';

/** The symbol under which Node's request carries its correlation id (`null`: an audit-excluded path). */
export const kCorrelationId = Symbol('kit.audit.correlationId');

type Slot = IncomingMessage & { [kCorrelationId]?: string | null };

/** What the audit trail's options say about correlation ids, read structurally (no import of kit/). */
interface CorrelationSettings {
  readonly correlationIdHeader: string;
  readonly forwardCorrelationId: boolean;
}

/** The audit trail's defaults, which apply when it is off. */
const DEFAULT_SETTINGS: CorrelationSettings = {
  correlationIdHeader: 'X-Correlation-Id',
  forwardCorrelationId: true,
};

/**
 * The correlation id of the request `reply` answers, the one Kit stores with what the request
 * wrote (AutoCrud's change history and outbox) and the one its answer carries. With the audit
 * trail on it is the audit entry's id; with it off (or on a path it excludes) it is made on the
 * first call, by the audit trail's rule: a valid incoming `X-Correlation-Id` (the audit trail's
 * `correlationIdHeader` and `forwardCorrelationId` when it is configured), else a new random
 * UUID. That first call also sets the correlation header on the answer and binds the id to the
 * request's logger (`correlationId` on every later line), so an id a client reports finds its
 * request. Unlike `getCorrelationId()` it never answers `undefined` and needs no async context.
 *
 * @example
 * ```ts
 * import { getRequestCorrelationId } from '@kit/core';
 *
 * app.post('/imports', async (request, reply) => {
 *   await customers.patch(7, { name: 'Ada' }, {
 *     changeContext: { correlationId: getRequestCorrelationId(reply), subject: 'import' },
 *   });
 *   return { imported: 1 };
 * });
 * ```
 */
export function getRequestCorrelationId(reply: FastifyReply): string {
  const raw = reply.request.raw as Slot;
  const id = raw[kCorrelationId];
  return typeof id === 'string' ? id : assign(reply, raw);
}

/**
 * The correlation id a problem answer carries: the request's, made now when the audit trail is
 * off, or `undefined` on a path the audit trail excludes (which it promises no correlation header).
 */
export function answeredCorrelationId(reply: FastifyReply): string | undefined {
  const raw = reply.request.raw as Slot;
  const id = raw[kCorrelationId];
  if (typeof id === 'string') return id;
  return id === null ? undefined : assign(reply, raw);
}

function assign(reply: FastifyReply, raw: Slot): string {
  const settings =
    (reply.server as { kit?: { options?: { auditTrail?: CorrelationSettings } } }).kit?.options
      ?.auditTrail ?? DEFAULT_SETTINGS;
  const header = settings.correlationIdHeader.toLowerCase();
  const id = settings.forwardCorrelationId ? correlationIdFrom(raw.headers[header]) : newUuid();
  raw[kCorrelationId] = id;
  if (!reply.raw.headersSent) reply.header(header, id);
  // The request's lines from now on (its error, Fastify's `request completed`) carry the id.
  const log = reply.log.child({ correlationId: id });
  reply.log = log;
  reply.request.log = log;
  return id;
}
