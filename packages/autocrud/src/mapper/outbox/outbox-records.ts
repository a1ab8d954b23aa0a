// The dispatcher's statements on the outbox's tables (outbox-table.ts): the leader's lease, the
// records due, their outcomes (a delivered record is deleted, a dead one moved to kit_outbox_dead). Plain SQL every dialect shares; the clock of the lease is the
// database's, so instances with skewed clocks agree on who leads.
import { sql } from 'kysely';
import type { Db } from '../sql/engine.js';
import type { SqlDialect } from '../sql/dialect.js';
import {
  OUTBOX_DEAD_TABLE,
  OUTBOX_LEASE_TABLE,
  OUTBOX_TABLE,
  RECORD_COLUMNS,
} from './outbox-table.js';

const LEASE = 'dispatcher';
const records = sql.table(OUTBOX_TABLE);
const leases = sql.table(OUTBOX_LEASE_TABLE);
const deadRecords = sql.table(OUTBOX_DEAD_TABLE);

/** One record as the dispatcher reads it. */
export interface OutboxRecordRow {
  readonly seq: number;
  readonly id: string;
  readonly entity: string;
  readonly rowKey: string;
  readonly operation: string;
  readonly versionBefore: number | null;
  readonly versionAfter: number | null;
  readonly payload: string;
  readonly correlationId: string | null;
  readonly subject: string | null;
  readonly traceId: string | null;
  readonly createdAt: number;
  readonly attempts: number;
  readonly nextAt: number;
  readonly done: string;
  /** 1 when an earlier record of its row waits for its retry: it must not overtake that one. */
  readonly held: number;
}

/**
 * Takes the lease for `ttlMs` when it is free, lapsed, or already `owner`'s; resolves the lease's
 * term (it grows at each change of owner), or undefined when another instance holds it.
 */
export async function acquireLease(
  db: Db,
  dialect: SqlDialect,
  owner: string,
  ttlMs: number,
): Promise<number | undefined> {
  const now = dialect.epochMs();
  const { rows } = await sql<{ term: number }>`
    insert into ${leases} (name, owner, term, expires_at) values (${LEASE}, ${owner}, 1, ${now} + ${ttlMs})
    on conflict (name) do update set
      term = case when ${leases}.owner = excluded.owner then ${leases}.term else ${leases}.term + 1 end,
      owner = excluded.owner, expires_at = excluded.expires_at
    where ${leases}.owner = excluded.owner or ${leases}.expires_at < ${now}
    returning term`.execute(db);
  return rows[0] === undefined ? undefined : Number(rows[0].term);
}

/** Extends the lease while `owner` still holds it at `term`; false when it was lost. */
export async function renewLease(
  db: Db,
  dialect: SqlDialect,
  owner: string,
  term: number,
  ttlMs: number,
): Promise<boolean> {
  const { rows } = await sql<{ term: number }>`
    update ${leases} set expires_at = ${dialect.epochMs()} + ${ttlMs}
    where name = ${LEASE} and owner = ${owner} and term = ${term} returning term`.execute(db);
  return rows.length > 0;
}

/** Gives the lease up at once (a graceful stop): the next instance takes over without waiting for it to lapse. */
export async function releaseLease(db: Db, owner: string, term: number): Promise<void> {
  await sql`update ${leases} set expires_at = 0 where name = ${LEASE} and owner = ${owner} and term = ${term}`.execute(
    db,
  );
}

const COLUMNS = sql`d.seq, d.id, d.entity, d.row_key as "rowKey", d.operation, d.version_before as "versionBefore", d.version_after as "versionAfter", d.payload,
  d.correlation_id as "correlationId", d.subject, d.trace_id as "traceId", d.created_at as "createdAt", d.attempts, d.next_at as "nextAt", d.done`;

/**
 * The records due at `now` (epoch ms), at most `limit`, oldest first, in one statement that also
 * finds the rows waiting for a retry: a record whose row has an earlier record waiting comes
 * `held` (the dispatcher leaves it for later). Only the records before the batch's last one can
 * hold one of it back, so only they are looked at: both reads are ranges of the primary key, the
 * read costs the batch, not the whole backlog behind it (the plan is in docs/decisions.md, "The
 * outbox table holds only what waits").
 */
export async function dueRecords(db: Db, now: number, limit: number): Promise<OutboxRecordRow[]> {
  const { rows } = await sql<OutboxRecordRow>`
    with d as (select * from ${records} where next_at <= ${now} order by seq limit ${limit}),
    w as (select entity, row_key, min(seq) as seq from ${records} where next_at > ${now} and seq < (select max(seq) from d) group by entity, row_key)
    select ${COLUMNS}, case when w.seq < d.seq then 1 else 0 end as held
    from d left join w on w.entity = d.entity and w.row_key = d.row_key order by d.seq`.execute(db);
  return rows.map(numeric);
}

/** The key a record's row is known by in the dispatcher. */
export function rowOf(entity: string, rowKey: string): string {
  return `${entity}\u0000${rowKey}`;
}

/**
 * Deletes records delivered to every target, a batch in one statement whose text does not depend
 * on the batch's size (one array parameter on PostgreSQL, one JSON text on SQLite): it is planned
 * once, not once per count of records. A delete writes no index entry (an update of an indexed
 * column would write one per index).
 */
export async function deleteDelivered(
  db: Db,
  dialect: SqlDialect,
  seqs: readonly number[],
): Promise<void> {
  if (seqs.length === 0) return;
  await sql`delete from ${records} where ${dialect.inList(sql.ref('seq'), dialect.bindList(seqs), 'bigint')}`.execute(
    db,
  );
}

/** A failed attempt's outcome. `done` lists the targets that have the record. */
interface FailedAttempt {
  readonly attempts: number;
  readonly nextAt: number;
  readonly done: string;
  readonly error: string;
}

/** A failed attempt to be retried at `nextAt`: columns no index holds, so PostgreSQL can update in place (HOT) where the page has room. */
export async function markRetry(db: Db, seq: number, outcome: FailedAttempt): Promise<void> {
  await sql`update ${records} set attempts = ${outcome.attempts}, next_at = ${outcome.nextAt}, done = ${outcome.done}, last_error = ${outcome.error} where seq = ${seq}`.execute(
    db,
  );
}

const OUTCOME: ReadonlySet<string> = new Set(['attempts', 'next_at', 'done', 'last_error']);
const KEPT = sql.join(RECORD_COLUMNS.filter((c) => !OUTCOME.has(c)).map((c) => sql.ref(c)));
const OUTCOME_COLUMNS = sql.raw('attempts, next_at, done, last_error, dead_at');

/**
 * A record out of attempts, moved to `kit_outbox_dead` with its last attempt (`dead_at` on the
 * database's clock): one statement on PostgreSQL, one transaction on SQLite (no DML in a CTE).
 */
export async function moveToDead(
  db: Db,
  dialect: SqlDialect,
  seq: number,
  outcome: FailedAttempt,
): Promise<void> {
  const values = sql`${outcome.attempts}, ${outcome.nextAt}, ${outcome.done}, ${outcome.error}, ${dialect.epochMs()}`;
  if (dialect.writableCte) {
    await sql`with moved as (delete from ${records} where seq = ${seq} returning *)
      insert into ${deadRecords} (seq, ${KEPT}, ${OUTCOME_COLUMNS}) select seq, ${KEPT}, ${values} from moved`.execute(
      db,
    );
    return;
  }
  await db.transaction().execute(async (trx) => {
    await sql`insert into ${deadRecords} (seq, ${KEPT}, ${OUTCOME_COLUMNS}) select seq, ${KEPT}, ${values} from ${records} where seq = ${seq}`.execute(
      trx,
    );
    await sql`delete from ${records} where seq = ${seq}`.execute(trx);
  });
}

/** How many records wait, and how many are dead. */
export async function backlog(db: Db): Promise<{ pending: number; dead: number }> {
  const { rows } = await sql<{
    pending: number;
    dead: number;
  }>`select (select count(*) from ${records}) as pending, (select count(*) from ${deadRecords}) as dead`.execute(
    db,
  );
  return { pending: Number(rows[0]?.pending ?? 0), dead: Number(rows[0]?.dead ?? 0) };
}

function numeric(row: OutboxRecordRow): OutboxRecordRow {
  // PostgreSQL's bigint arrives as text.
  return {
    ...row,
    seq: Number(row.seq),
    createdAt: Number(row.createdAt),
    nextAt: Number(row.nextAt),
    attempts: Number(row.attempts),
    held: Number(row.held),
  };
}
