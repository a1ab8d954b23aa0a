// The outbox dispatcher: on the one instance that holds the lease (kit_outbox_lease), reads the
// records due in seq order and delivers each to every target, the records of one row one after
// the other (a later record of a row never overtakes an earlier one, even while that one waits
// for a retry), different rows side by side. A failed delivery is retried with exponential
// backoff; after `maxAttempts` the record is dead (kept, counted, shown by the health check) and
// the row's later records go on. Runs off the request path: its own timer, one statement at a
// time on the database. See docs/decisions.md ("The outbox dispatcher's leader").
import { randomUUID } from 'node:crypto';
import type { Runner } from '../mapper/table.js';
import type { SqlFlavour } from '../mapper/engine.js';
import { acquireLease, backlog, dueRecords, markDelivered, markFailed, purgeDelivered, releaseLease, renewLease, rowOf, waitingRows, type OutboxRecordRow } from '../mapper/outbox-records.js';
import type { OutboxPayload } from '../mapper/outbox-sink.js';
import type { ChangeOperation } from '../mapper/changes.js';
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
  readonly retainMs: number;
}

/** Where the dispatcher reports (pino's logger fits). */
export interface DispatcherLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Rows delivered side by side in one batch. */
const PARALLEL_ROWS = 16;
const PURGE_EVERY_MS = 60_000;
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
  readonly #abort = new AbortController();
  #delivered = 0;
  #retries = 0;
  #deadLettered = 0;
  #lastError: string | undefined;
  #backlog = { pending: 0, dead: 0 };
  #backlogAt = 0;
  #purgedAt = 0;

  constructor(
    private readonly run: Runner,
    private readonly flavour: SqlFlavour,
    private readonly targets: () => readonly OutboxTarget[],
    private readonly settings: DispatcherSettings,
    private readonly log: DispatcherLog,
  ) {}

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
    const bound = setTimeout(() => this.#abort.abort(new Error('the outbox dispatcher stopped')), this.settings.deliveryTimeoutMs);
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
        if (failures === 1) this.log.warn({ err: this.#lastError }, 'AutoCrud outbox: the dispatcher could not reach the outbox; it tries again');
      }
      if (!busy && !this.#stopped) await this.#sleep(failures > 0 ? Math.min(this.settings.pollMs * 2 ** failures, this.settings.leaseMs) : this.settings.pollMs);
    }
    const term = this.#term;
    this.#term = undefined;
    clearInterval(this.#heartbeat);
    if (term !== undefined) await this.run((db) => releaseLease(db, this.owner, term)).catch(() => undefined);
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
    const term = await this.run((db) => acquireLease(db, this.flavour, this.owner, leaseMs));
    if (term === undefined) return false;
    this.#term = term;
    this.#leaseUntil = now + leaseMs;
    // Stopped while it was taken: the loop ends now and gives it up at once.
    if (this.#stopped) return false;
    // Renewed on a timer of its own: a batch with slow targets must not let the lease lapse under it.
    this.#heartbeat = setInterval(() => void this.#renew(), Math.max(1, Math.floor(leaseMs / 3)));
    this.#heartbeat.unref();
    this.log.info({ owner: this.owner, term }, 'AutoCrud outbox: this instance dispatches the outbox');
    return true;
  }

  async #renew(): Promise<void> {
    const term = this.#term;
    if (term === undefined || this.#renewing) return;
    this.#renewing = true;
    const started = Date.now();
    try {
      if (await this.run((db) => renewLease(db, this.flavour, this.owner, term, this.settings.leaseMs))) {
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
    this.log.warn({ owner: this.owner, reason: why }, 'AutoCrud outbox: this instance no longer dispatches the outbox');
    this.#term = undefined;
    clearInterval(this.#heartbeat);
  }

  /** One batch of due records; resolves how many were read. */
  async #batch(): Promise<number> {
    const now = Date.now();
    const { batchSize, retainMs } = this.settings;
    const [due, waiting] = await this.run(async (db) => [await dueRecords(db, now, batchSize), await waitingRows(db, now)] as const);
    if (now - this.#purgedAt > PURGE_EVERY_MS) {
      this.#purgedAt = now;
      await this.run((db) => purgeDelivered(db, this.flavour, retainMs));
    }
    if (due.length === 0) return 0;
    const rows = new Map<string, OutboxRecordRow[]>();
    for (const record of due) {
      const row = rowOf(record.entity, record.rowKey);
      const first = waiting.get(row);
      // An earlier record of this row waits for its retry: this one waits behind it.
      if (first !== undefined && first < record.seq) continue;
      const list = rows.get(row);
      if (list) list.push(record);
      else rows.set(row, [record]);
    }
    const delivered: number[] = [];
    const queue = [...rows.values()];
    const worker = async (): Promise<void> => {
      for (let records = queue.shift(); records; records = queue.shift()) {
        for (const record of records) {
          const outcome = await this.#deliver(record);
          if (outcome === 'retry') break;
          if (outcome === 'delivered') delivered.push(record.seq);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL_ROWS, queue.length) }, worker));
    await this.run((db) => markDelivered(db, this.flavour, delivered));
    this.#delivered += delivered.length;
    return due.length;
  }

  /** Delivers one record to every target that lacks it: `retry` holds the row's later records back, `dead` lets them go on. */
  async #deliver(record: OutboxRecordRow): Promise<'delivered' | 'retry' | 'dead'> {
    const done = new Set(record.done === '' ? [] : record.done.split('\n'));
    const message = messageOf(record);
    const wanted = this.targets().filter((t) => !done.has(t.name) && (t.entities === undefined || t.entities.includes(record.entity)));
    const failures: string[] = [];
    await Promise.all(
      wanted.map(async (target) => {
        const signal = AbortSignal.any([this.#abort.signal, AbortSignal.timeout(this.settings.deliveryTimeoutMs)]);
        try {
          await untilAborted(target.deliver(message, signal), signal);
          done.add(target.name);
        } catch (err) {
          failures.push(`${target.name}: ${describe(err)}`);
        }
      }),
    );
    if (failures.length === 0) return 'delivered';
    const attempts = record.attempts + 1;
    const dead = attempts >= this.settings.maxAttempts;
    const delay = Math.min(this.settings.retryBaseMs * 2 ** (attempts - 1), this.settings.retryMaxMs);
    const error = failures.join('; ').slice(0, 1000);
    this.#lastError = error;
    if (dead) this.#deadLettered += 1;
    else this.#retries += 1;
    await this.run((db) => markFailed(db, this.flavour, record.seq, { state: dead ? 'dead' : 'pending', attempts, nextAt: Date.now() + Math.round(delay * (0.8 + Math.random() * 0.4)), done: [...done].join('\n'), error }));
    if (dead) this.log.error({ seq: record.seq, id: record.id, entity: record.entity, attempts, error }, 'AutoCrud outbox: a record is dead after its last attempt; its row goes on with the next record');
    return dead ? 'dead' : 'retry';
  }
}

function messageOf(record: OutboxRecordRow): ChangeMessage {
  const payload = JSON.parse(record.payload) as OutboxPayload;
  return {
    id: record.id,
    seq: record.seq,
    entity: record.entity,
    key: JSON.parse(record.rowKey) as unknown,
    operation: record.operation as ChangeOperation,
    ...(record.versionBefore === null ? {} : { versionBefore: Number(record.versionBefore) }),
    ...(record.versionAfter === null ? {} : { versionAfter: Number(record.versionAfter) }),
    ...payload,
    ...(record.correlationId === null ? {} : { correlationId: record.correlationId }),
    ...(record.subject === null ? {} : { subject: record.subject }),
    ...(record.traceId === null ? {} : { traceId: record.traceId }),
    committedAt: new Date(record.createdAt).toISOString(),
    attempt: record.attempts + 1,
  };
}

/** The delivery, or the signal's reason once it aborts (a target that ignores its signal is not waited for). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function describe(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
