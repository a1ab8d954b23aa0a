// The dispatcher's statements on the outbox's tables (outbox-table.ts): the leader's lease, the
// records due, their outcomes. Plain SQL both flavours share; the clock of the lease is the
// database's, so instances with skewed clocks agree on who leads.
import { sql } from 'kysely';
import type { Db, SqlFlavour } from './engine.js';
import { epochMs, OUTBOX_LEASE_TABLE, OUTBOX_TABLE } from './outbox-table.js';

const LEASE = 'dispatcher';
const records = sql.table(OUTBOX_TABLE);
const leases = sql.table(OUTBOX_LEASE_TABLE);

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
export async function acquireLease(db: Db, flavour: SqlFlavour, owner: string, ttlMs: number): Promise<number | undefined> {
  const now = epochMs(flavour);
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
export async function renewLease(db: Db, flavour: SqlFlavour, owner: string, term: number, ttlMs: number): Promise<boolean> {
  const { rows } = await sql<{ term: number }>`
    update ${leases} set expires_at = ${epochMs(flavour)} + ${ttlMs}
    where name = ${LEASE} and owner = ${owner} and term = ${term} returning term`.execute(db);
  return rows.length > 0;
}

/** Gives the lease up at once (a graceful stop): the next instance takes over without waiting for it to lapse. */
export async function releaseLease(db: Db, owner: string, term: number): Promise<void> {
  await sql`update ${leases} set expires_at = 0 where name = ${LEASE} and owner = ${owner} and term = ${term}`.execute(db);
}

const COLUMNS = sql`d.seq, d.id, d.entity, d.row_key as "rowKey", d.operation, d.version_before as "versionBefore", d.version_after as "versionAfter", d.payload,
  d.correlation_id as "correlationId", d.subject, d.trace_id as "traceId", d.created_at as "createdAt", d.attempts, d.next_at as "nextAt", d.done`;

/**
 * The pending records due at `now` (epoch ms), at most `limit`, oldest first, in one statement
 * that also finds the rows waiting for a retry: a record whose row has an earlier record waiting
 * comes `held` (the dispatcher leaves it for later). Only the records before the batch's last one
 * can hold one of it back, so only they are looked at (the `(state, seq)` index bounds the scan):
 * the read costs the batch, not the whole backlog behind it.
 */
export async function dueRecords(db: Db, now: number, limit: number): Promise<OutboxRecordRow[]> {
  const { rows } = await sql<OutboxRecordRow>`
    with d as (select * from ${records} where state = 'pending' and next_at <= ${now} order by seq limit ${limit}),
    w as (select entity, row_key, min(seq) as seq from ${records} where state = 'pending' and next_at > ${now} and seq < (select max(seq) from d) group by entity, row_key)
    select ${COLUMNS}, case when w.seq < d.seq then 1 else 0 end as held
    from d left join w on w.entity = d.entity and w.row_key = d.row_key order by d.seq`.execute(db);
  return rows.map(numeric);
}

/** The key a record's row is known by in the dispatcher. */
export function rowOf(entity: string, rowKey: string): string {
  return `${entity}\u0000${rowKey}`;
}

/**
 * Marks records delivered to every target, a batch in one statement whose text does not depend on
 * the batch's size (one array parameter on PostgreSQL, one JSON text on SQLite): it is planned
 * once, not once per count of records.
 */
export async function markDelivered(db: Db, flavour: SqlFlavour, seqs: readonly number[]): Promise<void> {
  if (seqs.length === 0) return;
  const batch = flavour === 'postgres' ? sql`= any(${seqs}::bigint[])` : sql`in (select value from json_each(${JSON.stringify(seqs)}))`;
  await sql`update ${records} set state = 'delivered', finished_at = ${epochMs(flavour)}, next_at = 0 where seq ${batch}`.execute(db);
}

/** A failed attempt: retried at `nextAt`, or dead (`state: 'dead'`) once out of attempts. `done` lists the targets that have it. */
export async function markFailed(db: Db, flavour: SqlFlavour, seq: number, outcome: { readonly state: 'pending' | 'dead'; readonly attempts: number; readonly nextAt: number; readonly done: string; readonly error: string }): Promise<void> {
  await sql`update ${records} set state = ${outcome.state}, attempts = ${outcome.attempts}, next_at = ${outcome.nextAt}, done = ${outcome.done}, last_error = ${outcome.error},
    finished_at = ${outcome.state === 'dead' ? epochMs(flavour) : null} where seq = ${seq}`.execute(db);
}

/** How many records wait, and how many are dead. */
export async function backlog(db: Db): Promise<{ pending: number; dead: number }> {
  const { rows } = await sql<{ state: string; n: number }>`select state, count(*) as n from ${records} where state in ('pending', 'dead') group by state`.execute(db);
  const of = (state: string) => Number(rows.find((r) => r.state === state)?.n ?? 0);
  return { pending: of('pending'), dead: of('dead') };
}

/** Deletes delivered records older than `retainMs` (dead ones stay until someone looks at them). */
export async function purgeDelivered(db: Db, flavour: SqlFlavour, retainMs: number): Promise<void> {
  await sql`delete from ${records} where state = 'delivered' and finished_at < ${epochMs(flavour)} - ${retainMs}`.execute(db);
}

function numeric(row: OutboxRecordRow): OutboxRecordRow {
  // PostgreSQL's bigint arrives as text.
  return { ...row, seq: Number(row.seq), createdAt: Number(row.createdAt), nextAt: Number(row.nextAt), attempts: Number(row.attempts), held: Number(row.held) };
}
