// The options every repository call takes: its signal, its scope, who causes a write.
import type { Scope } from '../sql/scope.js';
import type { ChangeContext } from '../seam/changes.js';
import type { IncludePlan } from './includes.js';

/**
 * Options of every repository call.
 *
 * @example
 * ```ts
 * // Give up when the HTTP client goes away: a running statement is cancelled on PostgreSQL.
 * const row = await products.get(7, { signal: AbortSignal.timeout(2000) } satisfies CallOptions);
 * ```
 */
export interface CallOptions {
  /**
   * When it aborts, a statement still waiting for a connection gives up and a running one is
   * cancelled (PostgreSQL: a cancel request), and the call rejects with `signal.reason`.
   */
  readonly signal?: AbortSignal;
  /**
   * What the call may touch (see {@link Scope}): its conditions join every statement the call
   * runs, so a row outside it is absent (a read finds nothing, a write touches nothing, and no
   * change of it is recorded).
   */
  readonly scope?: Scope;
  /**
   * Who and what causes a write, for the entity's change sinks (the change history): the route
   * layer sets it from the request. Ignored by reads and by entities that record no changes.
   */
  readonly changeContext?: ChangeContext;
}

/**
 * Options of a write on one row.
 *
 * @example
 * ```ts
 * await products.update(7, { name: 'Kettle', price: 40 }, { ifVersion: [3] } satisfies WriteOptions);
 * ```
 */
export interface WriteOptions extends CallOptions {
  /**
   * Write only while the row is at one of these versions (the entity's `version` field), checked
   * in the same statement: otherwise nothing is written and `VersionConflictError` is thrown. An
   * empty list never matches.
   */
  readonly ifVersion?: readonly number[];
}

/**
 * Options of a read that may answer related rows with each row.
 *
 * @example
 * ```ts
 * const order = await orders.get(1, { signal: AbortSignal.timeout(2000), include: plan } satisfies ReadOptions);
 * ```
 */
export interface ReadOptions extends CallOptions {
  /**
   * The relations to set on each row, as the runtime planned them (see `IncludePlan`): inside the
   * row's own statement on PostgreSQL and PGlite, one more statement per relation on SQLite.
   */
  readonly include?: readonly IncludePlan[];
}
