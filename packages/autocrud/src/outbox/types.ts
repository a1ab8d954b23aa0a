// The outbox's public shapes: the message a subscriber receives, a delivery target, the counters.
import type { ChangeOperation } from '../mapper/seam/changes.js';

/**
 * One committed change, as the outbox delivers it. `id` is the record's idempotency id: the same
 * at every delivery of the record (a retry, or a redelivery by the next leader), so a subscriber
 * that remembers the ids it has handled handles each change exactly once.
 *
 * @example
 * ```ts
 * crud.onChange(Product, async (message) => {
 *   if (await seen(message.id)) return;
 *   await searchIndex.put(message.key, message.after);
 * });
 * ```
 */
export interface ChangeMessage {
  /** The idempotency id (a UUID), stable per record. */
  readonly id: string;
  /** The record's position in the outbox: ascending in commit order for the changes of one row. */
  readonly seq: number;
  readonly entity: string;
  /** The row's primary key, in Kit's form. */
  readonly key: unknown;
  readonly operation: ChangeOperation;
  readonly versionBefore?: number;
  readonly versionAfter?: number;
  /** The fields that changed (update, patch, soft delete). */
  readonly changed?: readonly string[];
  /** The row before: whole for a delete, the changed fields otherwise; absent for a create. */
  readonly before?: Readonly<Record<string, unknown>>;
  /** The row after: whole for a create, the changed fields otherwise; absent for a delete. */
  readonly after?: Readonly<Record<string, unknown>>;
  /** Sensitive fields the change touched: named, never with their values. */
  readonly redacted?: readonly string[];
  /** The correlation id of the request that made the change (its audit entry's). */
  readonly correlationId?: string;
  /** The authenticated subject (a JWT's `sub`) of that request. */
  readonly subject?: string;
  /** The W3C trace id of that request, when tracing was on. */
  readonly traceId?: string;
  /** When the change was written (the database's clock), ISO 8601. */
  readonly committedAt: string;
  /** This delivery's attempt, from 1. */
  readonly attempt: number;
}

/**
 * Somewhere the dispatcher delivers every record to: `@kit/store-redis`'s `redisStreamTarget`,
 * or a target of the host's (an HTTP webhook). `deliver` resolves once the target has the message
 * and rejects to be retried; `signal` aborts when the delivery times out or the dispatcher stops.
 * `name` must stay the same across deploys: the outbox remembers by it which targets have a record.
 *
 * @example
 * ```ts
 * const webhook: OutboxTarget = {
 *   name: 'billing-webhook',
 *   async deliver(message, signal) {
 *     const res = await fetch('https://billing.internal/changes', { method: 'POST', body: JSON.stringify(message), headers: { 'idempotency-key': message.id }, signal });
 *     if (!res.ok) throw new Error(`billing answered ${res.status}`);
 *   },
 * };
 * addKitAutoCrud(app, url, { outbox: { targets: [webhook] } });
 * ```
 */
export interface OutboxTarget {
  readonly name: string;
  /** Entities whose records it receives (their names); default every entity. */
  readonly entities?: readonly string[];
  /**
   * Delivers one record; a rejection is retried. `signal` aborts when the delivery outlives
   * `deliveryTimeoutMs` or the dispatcher stops; it is shared by deliveries that started close
   * together, so it means nothing once this delivery has settled.
   */
  deliver(message: ChangeMessage, signal: AbortSignal): Promise<void>;
}

/**
 * A subscriber `kitAutoCrud.onChange` registers: called on the instance that dispatches (the
 * leader), once per record, in commit order per row; a throw (or a rejection) is retried.
 *
 * @example
 * ```ts
 * const handler: ChangeHandler = async (message) => { await cache.delete(`product:${String(message.key)}`); };
 * ```
 */
export type ChangeHandler = (message: ChangeMessage, signal: AbortSignal) => void | Promise<void>;

/**
 * What this instance's dispatcher has done since it started, and the outbox's backlog (the whole
 * database's, read at most once a second).
 *
 * @example
 * ```ts
 * const { deadLettered, retries } = crud.outboxStats() ?? { deadLettered: 0, retries: 0 };
 * ```
 */
export interface OutboxStats {
  /** True while this instance holds the lease and dispatches. */
  readonly leader: boolean;
  /** Records delivered to every target by this instance. */
  readonly delivered: number;
  /** Failed attempts this instance will retry (one per record and attempt). */
  readonly retries: number;
  /** Records this instance moved to `kit_outbox_dead` (out of attempts). */
  readonly deadLettered: number;
  /** Records waiting for delivery in `kit_outbox` (last read). */
  readonly pending: number;
  /** Dead records in `kit_outbox_dead` (last read). */
  readonly dead: number;
  /** The last delivery failure, in a few words (no stack). */
  readonly lastError?: string;
}
