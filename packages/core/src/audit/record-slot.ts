// Where a request's audit record rides: on Node's response object under a symbol (see hooks.ts),
// and the one thing a plugin may do to it, `setAuditDetail`. Kept apart from hooks.ts so that the
// public declarations of setAuditDetail do not reach the record's class.
import type { FastifyReply } from 'fastify';
import type { AuditDetailValue } from './entry.js';

/** The symbol under which the response carries its audit record. */
export const kRecord = Symbol('kit.audit.record');

/** What `setAuditDetail` writes on a record. */
interface DetailHolder {
  details: Record<string, AuditDetailValue> | undefined;
}

/**
 * Adds `name: value` to the audit entry of the request `reply` answers (`AuditLogEntry.details`):
 * the seam through which a plugin tells the trail what the request did (AutoCrud: `changes`, the
 * number of change-history rows it recorded, so an entry joins its changes on the correlation id).
 * A second call with the same name replaces the value. Does nothing for a request that is not
 * audited (no audit trail, an excluded path) or once the entry is complete.
 *
 * @example
 * ```ts
 * app.post('/import', async (request, reply) => {
 *   const rows = await importRows(request.body);
 *   setAuditDetail(reply, 'importedRows', rows.length);
 *   return { imported: rows.length };
 * });
 * ```
 */
export function setAuditDetail(reply: FastifyReply, name: string, value: AuditDetailValue): void {
  const record = (reply.raw as unknown as { [kRecord]?: DetailHolder | undefined })[kRecord];
  if (record === undefined) return;
  (record.details ??= {})[name] = value;
}
