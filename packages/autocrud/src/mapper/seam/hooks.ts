// The read/write seam: per entity, hooks around its reads and writes, registered at start-up by the
// layers built on it (the change history, the outbox; a change feed, aggregates and read replicas
// next). Reads and writes call the seam and never know who is on it. Four kinds, from what those
// layers need:
//
// - `read`: wraps the runner the entity's reads run on, once, when registered (a replica layer
//   picks the connection per call inside the runner it returns).
// - `before`: inside the write's transaction, before its statements run (a layer takes a lock,
//   checks or refuses: a throw rolls the transaction back and nothing is written).
// - `write`: inside the write's transaction, after its rows are written and before COMMIT, with
//   the changes (a change sink: history rows, outbox records are written on the same transaction).
// - `committed`: after COMMIT, with the committed changes (waking a dispatcher, a change feed).
//
// What a request pays is decided here at registration, not per call: `transactional`,
// `recording`, `guarded` and `inline` are plain fields recomputed when a hook is added, and `read`
// is the composed runner itself, so an entity without hooks runs the plain statement on the plain
// runner, with no hook code, no transaction and no allocation of the seam's.
import type { Db } from '../sql/engine.js';
import type { SqlDialect } from '../sql/dialect.js';
import type { Entity } from '../../entity.js';
import type {
  ChangeContext,
  ChangeRecord,
  ChangeSink,
  ChangeSinkSql,
  ChangeTransaction,
} from './changes.js';

/**
 * Runs a query against the database with availability and error mapping (see `Database.run`).
 *
 * @example
 * ```ts
 * const rows = await run((db) => db.selectFrom('books').selectAll().execute(), signal);
 * ```
 */
export type Runner = <T>(query: (db: Db) => Promise<T>, signal?: AbortSignal) => Promise<T>;

/**
 * Called after COMMIT with the changes the write committed on one entity, in the order they were
 * made. It cannot undo the write: a throw is swallowed (the caller's answer stands).
 *
 * @example
 * ```ts
 * const wake: CommitHook = (changes) => { if (changes.length > 0) dispatcher.wake(); };
 * ```
 */
export type CommitHook = (changes: readonly ChangeRecord[], context: ChangeContext) => void;

/**
 * Called inside a write's transaction before the write's statements run, with the transaction
 * (statements run on it commit or roll back with the write) and the call's change context (empty
 * when the call carries none). A layer takes a lock, checks or refuses here: a throw rolls the
 * transaction back, nothing is written, and the write rejects with it.
 *
 * @example
 * ```ts
 * const lock: BeforeHook = async (tx) => { await tx.execute(tx.dialect.lockRows(tx.db.selectFrom('stock').selectAll().where('sku', '=', 'K-1')).compile(), ''); };
 * ```
 */
export type BeforeHook = (tx: ChangeTransaction, context: ChangeContext) => Promise<void>;

/**
 * One layer's hooks on one entity; each member optional.
 *
 * @example
 * ```ts
 * hooks.add({ before: async (tx, context) => { if (!context.subject) throw new Error('anonymous'); } });
 * hooks.add({ write: historySink(entity, dialect) });
 * hooks.add({ read: (next) => (query, signal) => next(query, signal) });
 * hooks.add({ committed: (changes) => feed.publish(changes) });
 * ```
 */
export interface EntityHook {
  /** The runner the entity's reads run on, given the one they would run on (composed once, at registration). */
  readonly read?: (next: Runner) => Runner;
  /** Inside the write's transaction, before its statements; a throw rolls the write back, nothing written. */
  readonly before?: BeforeHook;
  /** Inside the write's transaction, after its rows and before COMMIT; a throw rolls the write back. */
  readonly write?: ChangeSink;
  /** After COMMIT, with the committed changes. */
  readonly committed?: CommitHook;
}

/**
 * What a layer is given for one entity: its hooks, whether it is a table of Kit's own that a layer
 * writes (the history's), and `require`, which registers such an entity with the database.
 *
 * @example
 * ```ts
 * const attach = ({ entity, hooks, own }: LayerTarget) => { if (!own) hooks.add({ write: auditSink(entity) }); };
 * ```
 */
export interface LayerTarget {
  readonly entity: Entity;
  readonly hooks: EntityHooks;
  /** The database's dialect (a layer's SQL form is written for it). */
  readonly dialect: SqlDialect;
  /** True for an entity a layer required (Kit's own table), whose writes no layer records. */
  readonly own: boolean;
  /** Registers an entity the layer writes (its table is checked or created with the others). */
  require(entity: Entity): void;
}

/**
 * A layer on the seam: attached to every entity's hooks as its repository is made (the database
 * calls it at start-up, for entities made before and after it is added).
 *
 * @example
 * ```ts
 * const audit: SeamLayer = { attach: ({ entity, hooks, own }) => { if (!own) hooks.add({ write: auditSink(entity) }); } };
 * ```
 */
export interface SeamLayer {
  attach(target: LayerTarget): void;
}

const EMPTY: ChangeContext = Object.freeze({});

/**
 * The hooks of one entity, in registration order (history first, then the outbox), and what they
 * make a request do, computed when a hook is added.
 *
 * @example
 * ```ts
 * const hooks = new EntityHooks(run);
 * hooks.add({ write: sink });
 * if (hooks.recording) await table.transaction(...);
 * ```
 */
export class EntityHooks {
  readonly #before: BeforeHook[] = [];
  readonly #write: ChangeSink[] = [];
  readonly #committed: CommitHook[] = [];
  readonly #base: Runner;
  /** True when a write must hand its changes to a hook (and so runs in a transaction). */
  recording = false;
  /** True when a hook runs before a write's statements (and so the write runs in a transaction). */
  guarded = false;
  /** True when a write runs in a transaction for its hooks: it records its changes or is guarded. */
  transactional = false;
  /** True when a hook waits for the committed changes. */
  awaitsCommit = false;
  /**
   * Every write hook's SQL form, in order, when a single write may record its change inside its
   * own statement: every write hook has one, no hook runs before the write (the one statement
   * leaves it no place inside a transaction) and no hook waits for the committed changes.
   */
  inline: readonly ChangeSinkSql[] | undefined;
  /** The runner the entity's reads run on: the table's own unless a read hook wraps it. */
  read: Runner;

  constructor(run: Runner) {
    this.#base = run;
    this.read = run;
  }

  /** Registers one layer's hooks (at start-up) and recomputes what a request does. */
  add(hook: EntityHook): void {
    if (hook.read) this.read = hook.read(this.read);
    if (hook.before) this.#before.push(hook.before);
    if (hook.write) this.#write.push(hook.write);
    if (hook.committed) this.#committed.push(hook.committed);
    this.awaitsCommit = this.#committed.length > 0;
    this.recording = this.#write.length > 0 || this.awaitsCommit;
    this.guarded = this.#before.length > 0;
    this.transactional = this.recording || this.guarded;
    const forms = this.#write.map((s) => s.sql);
    this.inline =
      !this.awaitsCommit &&
      !this.guarded &&
      forms.length > 0 &&
      forms.every((f): f is ChangeSinkSql => f !== undefined)
        ? forms
        : undefined;
  }

  /** Whether no read hook is registered (the reads run on the table's own runner). */
  get plainReads(): boolean {
    return this.read === this.#base;
  }

  /**
   * Runs every before hook in turn, on the write's transaction, before its statements; a throw
   * rolls the transaction back. Called only when {@link EntityHooks.guarded}.
   */
  async begin(tx: ChangeTransaction, context: ChangeContext | undefined): Promise<void> {
    const ctx = context ?? EMPTY;
    for (const hook of this.#before) await hook(tx, ctx);
  }

  /**
   * Hands `changes` to every write hook in turn, on the write's transaction; `count` collects how
   * many were recorded, and `committed` what the commit hooks are to be told after COMMIT.
   */
  async record(
    tx: ChangeTransaction,
    changes: readonly ChangeRecord[],
    context: ChangeContext | undefined,
    count: { n: number },
    committed: Committed,
  ): Promise<void> {
    if (changes.length === 0) return;
    const ctx = context ?? EMPTY;
    for (const sink of this.#write) await sink(tx, changes, ctx);
    count.n += changes.length;
    if (this.awaitsCommit) committed.push([this, changes]);
  }

  /** Tells the commit hooks what committed (never throws into the write: it committed). */
  commit(changes: readonly ChangeRecord[], context: ChangeContext | undefined): void {
    for (const hook of this.#committed) {
      try {
        hook(changes, context ?? EMPTY);
      } catch {
        // A listener's fault must not turn a committed write into a failed answer.
      }
    }
  }
}

/** The changes of one transaction the commit hooks are told of, by entity, in order. */
export type Committed = Array<[EntityHooks, readonly ChangeRecord[]]>;

/**
 * A sink's view of a Kysely transaction.
 *
 * @example
 * ```ts
 * const tx = changeTransaction(trx, dialect);
 * ```
 */
export function changeTransaction(trx: Db, dialect: SqlDialect): ChangeTransaction {
  return {
    db: trx,
    dialect,
    execute: async (query) => (await trx.executeQuery<Record<string, unknown>>(query)).rows,
  };
}

/**
 * After COMMIT: reports the recorded count to the call's context and tells each entity's commit
 * hooks what committed (never throws into the write: the write committed).
 *
 * @example
 * ```ts
 * afterCommit(context, count, committed);
 * ```
 */
export function afterCommit(
  context: ChangeContext | undefined,
  count: { n: number },
  committed?: Committed,
): void {
  if (committed) for (const [hooks, changes] of committed) hooks.commit(changes, context);
  if (count.n === 0 || !context?.committed) return;
  try {
    context.committed(count.n);
  } catch {
    // A counter's fault must not turn a committed write into a failed answer.
  }
}
