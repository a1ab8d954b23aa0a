import { AsyncLocalStorage } from 'node:async_hooks';
import { newUuid } from './uuid.js';

/**
 * What an incoming correlation id must look like to be forwarded (docs/decisions.md, "Audit trail"); anything else
 * is replaced by a new UUID.
 *
 * @example
 * ```ts
 * // Check an id before sending it to a service that applies the same rule.
 * const id = CORRELATION_ID_PATTERN.test(upstreamId) ? upstreamId : randomUUID();
 * ```
 */
export const CORRELATION_ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * The store is the correlation id string itself: nothing is allocated per request to carry it.
 * One instance per process; every Kit app shares it, each request sees its own value.
 */
const context = new AsyncLocalStorage<string>();

/**
 * The correlation id of the request being handled, from anywhere inside it (hooks, handlers,
 * services they call, across `await`), or `undefined` outside an audited request (excluded
 * paths, start-up code, timers started outside a request, or when the audit trail is off).
 *
 * Backed by `AsyncLocalStorage`. On Node 20 enabling it costs about 1.5 µs of CPU per request
 * on a hello-world async route (async hooks track every promise), on Node 22 about 12,000
 * instructions per request (docs/benchmarks.md); on Node 24 about 0.3 µs.
 * Hosts that do not call this function can turn the context off with
 * `auditTrail.correlationIdContext = false` and still read the id as `request.id`. To read a
 * request's correlation id whether or not the audit trail is on, use `getRequestCorrelationId(reply)`.
 *
 * @example
 * ```ts
 * import { getCorrelationId } from '@kit/core';
 *
 * export class PaymentsClient {
 *   async charge(order: Order) {
 *     await fetch(url, { headers: { 'x-correlation-id': getCorrelationId() ?? '' } });
 *   }
 * }
 * ```
 */
export function getCorrelationId(): string | undefined {
  return context.getStore();
}

/**
 * Makes `id` the current correlation id for the rest of this synchronous execution and every
 * asynchronous continuation created from it. `enterWith` rather than `run`: the audit hooks are
 * Fastify hooks that hand over with `done()`, so there is no callback to wrap without an extra
 * closure per request.
 */
export function enterCorrelationContext(id: string | undefined): void {
  context.enterWith(id as string);
}

/**
 * Returns `incoming` when it is a string of 1 to 128 characters from `A-Z a-z 0-9 . _ -`, else a
 * new UUID. Anything else (CR/LF, spaces, non-ASCII, too long, repeated headers joined by `,`) is
 * replaced rather than cleaned, so a forwarded id is always byte-for-byte what the caller sent.
 */
export function correlationIdFrom(incoming: unknown): string {
  if (
    typeof incoming === 'string' &&
    incoming.length <= 128 &&
    CORRELATION_ID_PATTERN.test(incoming)
  )
    return incoming;
  return newUuid();
}
