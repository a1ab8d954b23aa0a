// The outbox dispatcher: on the one instance that holds the lease (kit_outbox_lease), reads the
// records due in seq order and delivers each to every target, the records of one row one after
// the other (a later record of a row never overtakes an earlier one, even while that one waits
// for a retry), different rows side by side. A failed delivery is retried with exponential
// backoff; after `maxAttempts` the record is dead (moved to kit_outbox_dead, counted, shown by the
// health check) and the row's later records go on. A delivered record is deleted. Runs off the request path: its own timer, one statement at a
// time on the database. See docs/decisions.md ("The outbox dispatcher's leader").
import { randomUUID } from 'node:crypto';
import type { Runner } from '../mapper/seam/table.js';
import type { SqlDialect } from '../mapper/sql/dialect.js';
import {
  acquireLease,
  backlog,
  deleteDelivered,
  dueRecords,
  markRetry,
  moveToDead,
  releaseLease,
  renewLease,
  rowOf,
  type OutboxRecordRow,
} from '../mapper/outbox/outbox-records.js';
import type { OutboxPayload } from '../mapper/outbox/outbox-sink.js';
import type { ChangeOperation } from '../mapper/seam/changes.js';
import { Deadlines } from './deadlines.js';
import type { ChangeMessage, OutboxStats, OutboxTarget } from './types.js';

/** The dispatcher's settings (`outbox` of `addKitAutoCrud`, resolved). */
export interface DispatcherSettings {
  readonly maxAttempts: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  readonly leaseMs: number;
  readonly pollMs: number;
  readonly batchSize: number;
  readonly deliveryTimeoutMs: number;
}

/** Where the dispatcher reports (pino's logger fits). */
export interface DispatcherLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Rows delivered side by side in one batch. */
const PARALLEL_ROWS = 16;
const BACKLOG_EVERY_MS = 1000;

export class OutboxDispatcher {
  readonly owner = randomUUID();
  #term: number | undefined;
  #leaseUntil = 0;
  #running: Promise<void> | undefined;
  #stopped = false;
  #wake: (() => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #renewing = false;
  readonly #deadlines: Deadlines;
  #delivered = 0;
  #retries = 0;
  #deadLettered = 0;
  #lastError: string | undefined;
  #backlog = { pending: 0, dead: 0 };
  #backlogAt = 0;

  constructor(
    private readonly run: Runner,
    private readonly dialect: SqlDialect,
    private readonly targets: () => readonly OutboxTarget[],
    private readonly settings: DispatcherSettings,
    private readonly log: DispatcherLog,
  ) {
    this.#deadlines = new Deadlines(settings.deliveryTimeoutMs);
  }

  get leader(): boolean {
    return this.#term !== undefined && Date.now() < this.#leaseUntil;
  }

  stats(): OutboxStats {
    return {
      leader: this.leader,
      delivered: this.#delivered,
      retries: this.#retries,
      deadLettered: this.#deadLettered,
      pending: this.#backlog.pending,
      dead: this.#backlog.dead,
      ...(this.#lastError === undefined ? {} : { lastError: this.#lastError }),
    };
  }

  /** The backlog, read from the database at most once a second (the health check asks). */
  async backlog(): Promise<{ pending: number; dead: number }> {
    if (Date.now() - this.#backlogAt >= BACKLOG_EVERY_MS) {
      this.#backlog = await this.run((db) => backlog(db));
      this.#backlogAt = Date.now();
    }
    return this.#backlog;
  }

  /** Starts the loop (idempotent). */
  start(): void {
    if (this.#running || this.#stopped) return;
    this.#running = this.#loop();
  }

  /** Looks for records now rather than at the next poll (a write on this instance committed). */
  nudge(): void {
    this.#wake?.();
  }

  /**
   * Stops: the delivery in flight finishes (bounded by `deliveryTimeoutMs`), the lease is given
   * up so the next instance takes over at once, and what is left stays in the outbox for it.
   */
  async stop(): Promise<void> {
    if (this.#stopped) return this.#running;
    this.#stopped = true;
    this.#wake?.();
    const bound = setTimeout(
      () => this.#deadlines.abortAll(new Error('the outbox dispatcher stopped')),
      this.settings.deliveryTimeoutMs,
    );
    try {
      await this.#running;
    } finally {
      clearTimeout(bound);
    }
  }

  async #loop(): Promise<void> {
    let failures = 0;
    while (!this.#stopped) {
      let busy = false;
      try {
        if (await this.#lead()) busy = (await this.#batch()) >= this.settings.batchSize;
        failures = 0;
      } catch (err) {
        failures += 1;
        this.#lastError = describe(err);
        if (failures === 1)
          this.log.warn(
            { err: this.#lastError },
            'AutoCrud outbox: the dispatcher could not reach the outbox; it tries again',
          );
      }
      if (!busy && !this.#stopped)
        await this.#sleep(
          failures > 0
            ? Math.min(this.settings.pollMs * 2 ** failures, this.settings.leaseMs)
            : this.settings.pollMs,
        );
    }
    const term = this.#term;
    this.#term = undefined;
    clearInterval(this.#heartbeat);
    if (term !== undefined)
      await this.run((db) => releaseLease(db, this.owner, term)).catch(() => undefined);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.#wake = () => {
        clearTimeout(this.#timer);
        this.#wake = undefined;
        resolve();
      };
      this.#timer = setTimeout(() => this.#wake?.(), ms);
    });
  }

  /** Takes the lease when this instance has none and it is free; true while leading. */
  async #lead(): Promise<boolean> {
    if (this.#term !== undefined) {
      if (Date.now() < this.#leaseUntil) return true;
      this.#lost('its lease lapsed before it could renew it');
    }
    const { leaseMs } = this.settings;
    const now = Date.now();
    const term = await this.run((db) => acquireLease(db, this.dialect, this.owner, leaseMs));
    if (term === undefined) return false;
    this.#term = term;
    this.#leaseUntil = now + leaseMs;
    // Stopped while it was taken: the loop ends now and gives it up at once.
    if (this.#stopped) return false;
    // Renewed on a timer of its own: a batch with slow targets must not let the lease lapse under it.
    this.#heartbeat = setInterval(() => void this.#renew(), Math.max(1, Math.floor(leaseMs / 3)));
    this.#heartbeat.unref();
    this.log.info(
      { owner: this.owner, term },
      'AutoCrud outbox: this instance dispatches the outbox',
    );
    return true;
  }

  async #renew(): Promise<void> {
    const term = this.#term;
    if (term === undefined || this.#renewing) return;
    this.#renewing = true;
    const started = Date.now();
    try {
      if (
        await this.run((db) =>
          renewLease(db, this.dialect, this.owner, term, this.settings.leaseMs),
        )
      ) {
        if (this.#term === term) this.#leaseUntil = started + this.settings.leaseMs;
      } else if (this.#term === term) {
        this.#lost('another instance holds the lease');
      }
    } catch {
      // The database did not answer: the lease holds until it lapses, then the loop gives it up.
    } finally {
      this.#renewing = false;
    }
  }

  #lost(why: string): void {
    this.log.warn(
      { owner: this.owner, reason: why },
      'AutoCrud outbox: this instance no longer dispatches the outbox',
    );
    this.#term = undefined;
    clearInterval(this.#heartbeat);
  }

  /**
   * One batch of due records; resolves how many were read. Two statements on the success path,
   * whatever the batch's size: one reads it (with the rows waiting for a retry), one deletes every
   * record delivered. Only a failed delivery writes on its own (its attempt, its retry or death).
   */
  async #batch(): Promise<number> {
    const now = Date.now();
    const due = await this.run((db) => dueRecords(db, now, this.settings.batchSize));
    if (due.length === 0) return 0;
    const rows = new Map<string, OutboxRecordRow[]>();
    for (const record of due) {
      // An earlier record of this row waits for its retry: this one waits behind it.
      if (record.held === 1) continue;
      const row = rowOf(record.entity, record.rowKey);
      const list = rows.get(row);
      if (list) list.push(record);
      else rows.set(row, [record]);
    }
    const targets = this.targets();
    const byEntity = new Map<string, readonly OutboxTarget[]>();
    const targetsOf = (entity: string): readonly OutboxTarget[] => {
      let list = byEntity.get(entity);
      if (list === undefined)
        byEntity.set(
          entity,
          (list = targets.filter((t) => t.entities === undefined || t.entities.includes(entity))),
        );
      return list;
    };
    const delivered: number[] = [];
    const queue = [...rows.values()];
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let records = queue[next++]; records; records = queue[next++]) {
        for (const record of records) {
          const outcome = await this.#deliver(record, targetsOf(record.entity));
          if (outcome === 'retry') break;
          if (outcome === 'delivered') delivered.push(record.seq);
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(PARALLEL_ROWS, queue.length) }, worker));
    } finally {
      this.#deadlines.closeCurrent();
    }
    // Deleted even when the lease was lost meanwhile: these records were delivered, and deleting them
    // spares the next leader a redelivery (it may have sent some too: at least once, same ids).
    await this.run((db) => deleteDelivered(db, this.dialect, delivered));
    this.#delivered += delivered.length;
    return due.length;
  }

  /** Delivers one record to every target that lacks it: `retry` holds the row's later records back, `dead` lets them go on. */
  async #deliver(
    record: OutboxRecordRow,
    targets: readonly OutboxTarget[],
  ): Promise<'delivered' | 'retry' | 'dead'> {
    const done = record.done === '' ? undefined : new Set(record.done.split('\n'));
    const wanted = done === undefined ? targets : targets.filter((t) => !done.has(t.name));
    if (wanted.length === 0) return 'delivered';
    const message = messageOf(record);
    const deadline = this.#deadlines.enter();
    let failures: string[] | undefined;
    let reached: string[] | undefined;
    const attempt = async (target: OutboxTarget): Promise<void> => {
      try {
        await deadline.race(target.deliver(message, deadline.signal));
        (reached ??= []).push(target.name);
      } catch (err) {
        (failures ??= []).push(`${target.name}: ${describe(err)}`);
      }
    };
    try {
      if (wanted.length === 1) await attempt(wanted[0] as OutboxTarget);
      else await Promise.all(wanted.map(attempt));
    } finally {
      deadline.release();
    }
    if (failures === undefined) return 'delivered';
    const attempts = record.attempts + 1;
    const dead = attempts >= this.settings.maxAttempts;
    const delay = Math.min(
      this.settings.retryBaseMs * 2 ** (attempts - 1),
      this.settings.retryMaxMs,
    );
    const error = failures.join('; ').slice(0, 1000);
    this.#lastError = error;
    if (dead) this.#deadLettered += 1;
    else this.#retries += 1;
    const has = [...(done ?? []), ...(reached ?? [])].join('\n');
    const outcome = {
      attempts,
      nextAt: dead ? 0 : Date.now() + Math.round(delay * (0.8 + Math.random() * 0.4)),
      done: has,
      error,
    };
    await this.run((db) =>
      dead ? moveToDead(db, this.dialect, record.seq, outcome) : markRetry(db, record.seq, outcome),
    );
    if (dead)
      this.log.error(
        { seq: record.seq, id: record.id, entity: record.entity, attempts, error },
        'AutoCrud outbox: a record is dead after its last attempt; its row goes on with the next record',
      );
    return dead ? 'dead' : 'retry';
  }
}

/** The message a target gets, built in place (it is made once per record and attempt). */
function messageOf(record: OutboxRecordRow): ChangeMessage {
  const payload = JSON.parse(record.payload) as OutboxPayload;
  const message: Record<string, unknown> = {
    id: record.id,
    seq: record.seq,
    entity: record.entity,
    key: JSON.parse(record.rowKey) as unknown,
    operation: record.operation as ChangeOperation,
  };
  if (record.versionBefore !== null) message.versionBefore = Number(record.versionBefore);
  if (record.versionAfter !== null) message.versionAfter = Number(record.versionAfter);
  Object.assign(message, payload);
  if (record.correlationId !== null) message.correlationId = record.correlationId;
  if (record.subject !== null) message.subject = record.subject;
  if (record.traceId !== null) message.traceId = record.traceId;
  message.committedAt = new Date(record.createdAt).toISOString();
  message.attempt = record.attempts + 1;
  return message as unknown as ChangeMessage;
}

function describe(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
