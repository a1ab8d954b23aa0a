// A fleet of outbox hosts (fixtures/outbox-host.ts) under write load (outbox-writers.ts), and its
// dispatching leader SIGKILLed round after round: the part the PostgreSQL and the SQLite
// leader-kill tests share.
// Delivery is judged by what reached the subscriber (DELIVERED_FILE), the Redis Stream and the
// committed writes, never by the outbox table's bookkeeping: the one question asked of the table
// is "which records still wait", through the `waitingIds` each test passes in.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startProcess, stopProcess, type ProcessHost } from '@kit/test-support/processes';
import { until } from '@kit/test-support/until';
import type { Writers } from './outbox-writers.ts';

const fixture = path.join(import.meta.dirname, 'fixtures', 'outbox-host.ts');

export type Host = ProcessHost;

/** One line of DELIVERED_FILE: the file subscriber accepted a record. */
export interface Delivery {
  id: string;
  key: number;
  version: number;
  attempt: number;
  pid: number;
}

/** Starts an outbox host with `env`. */
export function startOutboxHost(env: Record<string, string>): Promise<Host> {
  return startProcess(fixture, env);
}

export function readDeliveries(file: string): Delivery[] {
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Delivery)
    : [];
}

export async function leading(host: Host): Promise<boolean> {
  return (
    (await (
      await fetch(`${host.base}/outbox-stats`, { signal: AbortSignal.timeout(5000) })
    ).json()) as { leader: boolean }
  ).leader;
}

/** One round: how long the takeover took, and how many deliveries the killed leader had not marked. */
export interface Round {
  pid: number;
  takeoverMs: number;
  unmarked: number;
}

/**
 * `rounds` times: finds the leader among `fleet`, waits until it has delivered a record that still
 * waits (mid-delivery), SIGKILLs it, measures until another instance leads, and starts a
 * replacement. A round kills only while the fleet has `minimum` hosts, so at least `minimum - 1`
 * stay up through every kill; a replacement may still be starting when the next round begins (a
 * start under load takes longer than a takeover). `fleet` is changed in place; every replacement
 * has joined it when this settles.
 */
export async function killLeaderRounds(options: {
  rounds: number;
  fleet: Host[];
  minimum: number;
  start: () => Promise<Host>;
  waitingIds: () => Promise<Set<string>>;
  deliveredFile: string;
  leaseMs: number;
  log: (line: string) => void;
}): Promise<Round[]> {
  const { fleet, leaseMs } = options;
  const bound = leaseMs + 8000;
  const rounds: Round[] = [];
  const starting = new Set<Promise<void>>();
  let refused: unknown;
  const replace = (): void => {
    const started: Promise<void> = options
      .start()
      .then((host) => void fleet.push(host))
      .catch((err: unknown) => void (refused ??= err))
      .finally(() => starting.delete(started));
    starting.add(started);
  };
  try {
    for (let round = 1; round <= options.rounds; round++) {
      while (fleet.length < options.minimum) {
        if (refused !== undefined) throw refused;
        await Promise.race([...starting, sleep(100)]);
      }
      const { value: leader } = await until(
        'a leader',
        async () =>
          (
            await Promise.all(
              fleet.map(async (h) => ((await leading(h).catch(() => false)) ? h : undefined)),
            )
          ).find((h) => h !== undefined),
        { timeoutMs: bound, retryErrors: true },
      );
      // Mid-delivery: the leader's subscriber has accepted records that still wait to be marked.
      await until(
        `round ${round}: the leader mid-delivery`,
        async () => {
          // The file first: a record it delivered that still waits after that was delivered but not yet marked.
          const delivered = readDeliveries(options.deliveredFile).filter(
            (d) => d.pid === leader.pid,
          );
          const waiting = await options.waitingIds();
          return delivered.some((d) => waiting.has(d.id)) || undefined;
        },
        { timeoutMs: 30_000, retryErrors: true },
      );
      const killedAt = Date.now();
      fleet.splice(fleet.indexOf(leader), 1);
      await stopProcess(leader, 'SIGKILL');
      const waiting = await options.waitingIds();
      const unmarked = readDeliveries(options.deliveredFile).filter(
        (d) => d.pid === leader.pid && waiting.has(d.id),
      ).length;
      replace();
      await until(
        `round ${round}: another instance leading`,
        async () =>
          (await Promise.all(fleet.map((h) => leading(h).catch(() => false)))).some(Boolean)
            ? true
            : undefined,
        { timeoutMs: bound, retryErrors: true },
      );
      const takeoverMs = Date.now() - killedAt;
      assert.ok(takeoverMs < bound, `round ${round}: takeover took ${takeoverMs} ms`);
      rounds.push({ pid: leader.pid, takeoverMs, unmarked });
      options.log(
        `round ${round}: leader ${leader.pid} SIGKILLed with ${unmarked} deliveries not yet marked, ${fleet.length} instances up; another led after ${takeoverMs} ms`,
      );
    }
  } finally {
    // Every replacement joins the fleet before this settles, so the test's cleanup ends it.
    await Promise.all(starting);
  }
  if (refused !== undefined) throw refused;
  return rounds;
}

/**
 * `killLeaderRounds` while `writers` write through the fleet the whole time (alone for the first
 * 500 ms); the writers are stopped after, whatever happened.
 */
export async function killRoundsUnderWrites(
  writers: Writers,
  options: Parameters<typeof killLeaderRounds>[0],
): Promise<Round[]> {
  writers.start();
  try {
    await sleep(500);
    return await killLeaderRounds(options);
  } finally {
    await writers.stop();
  }
}

/**
 * Waits until every change in the table reached the subscriber (and the stream), then checks: the
 * changes delivered are exactly the committed ones plus those unanswered writes that the table
 * shows committed; each change under one record id and each id one change (repeats only under the
 * same id); first deliveries in version order per row; the stream holds each record once.
 * Resolves the deliveries.
 */
export async function assertEveryWriteDelivered(options: {
  writers: Writers;
  /** The table now: each row's name and version. */
  table: () => Promise<Array<{ id: number; name: string; version: number }>>;
  waitingIds: () => Promise<Set<string>>;
  deliveredFile: string;
  /** The Redis Stream's record ids, in stream order (when there is one). */
  stream?: () => Promise<string[]>;
}): Promise<Delivery[]> {
  const { writers } = options;
  const table = await options.table();
  const expected = new Set<string>();
  for (const row of table) for (let v = 1; v <= row.version; v++) expected.add(`${row.id}@${v}`);
  // The table against what the writers were told.
  const byId = new Map(table.map((r) => [r.id, r]));
  const unknownCreates = new Set(writers.unknownCreates);
  for (const [id, log] of writers.rows) {
    const row = byId.get(id);
    assert.ok(row, `row ${id} was created (201) but is not in the table`);
    for (const v of log.committed)
      assert.ok(
        v <= row.version,
        `${id}@${v} was answered 2xx but the row is at version ${row.version}`,
      );
    // One version per write that committed: every 2xx, and at most every unanswered one.
    assert.ok(
      row.version >= log.committed.length && row.version <= log.committed.length + log.unknown,
      `row ${id}: version ${row.version}, ${log.committed.length} writes answered 2xx, ${log.unknown} unanswered`,
    );
  }
  for (const row of table)
    if (!writers.rows.has(row.id))
      assert.ok(
        unknownCreates.has(row.name),
        `row ${row.id} (${row.name}) is in the table, but no writer created it`,
      );

  const changeOf = (d: Delivery) => `${d.key}@${d.version}`;
  const missing = async (): Promise<string | undefined> => {
    const waiting = (await options.waitingIds()).size;
    const delivered = new Set(readDeliveries(options.deliveredFile).map(changeOf));
    const lost = [...expected].filter((change) => !delivered.has(change));
    const streamed = options.stream === undefined ? expected.size : (await options.stream()).length;
    return waiting === 0 && lost.length === 0 && streamed >= expected.size
      ? undefined
      : `${waiting} records waiting, ${lost.length} of ${expected.size} changes not delivered (${lost.slice(0, 5).join(', ')}), ${streamed} in the stream`;
  };
  await until('every change delivered', async () => (await missing()) === undefined, {
    timeoutMs: 60_000,
    retryErrors: true,
    diagnostic: async () => (await missing()) ?? 'every change delivered on the last look',
  });
  const seen = readDeliveries(options.deliveredFile);
  assert.deepEqual(
    new Set(seen.map(changeOf)),
    expected,
    'the changes delivered are exactly the committed ones',
  );
  const changeOfId = assertOneIdPerChange(seen);
  if (options.stream) {
    const entries = await options.stream();
    assert.equal(entries.length, new Set(entries).size, 'the stream holds each record once');
    assert.deepEqual(
      new Set(entries),
      new Set(changeOfId.keys()),
      'the stream holds exactly the records delivered',
    );
  }
  return seen;
}

/**
 * Each change delivered under one record id and each id one change (a repeat only ever under the
 * record's own id), and each row's first deliveries in version order; the change of each id.
 */
export function assertOneIdPerChange(seen: readonly Delivery[]): Map<string, string> {
  const idOf = new Map<string, string>();
  const changeOfId = new Map<string, string>();
  for (const d of seen) {
    const change = `${d.key}@${d.version}`;
    assert.equal(idOf.get(change) ?? d.id, d.id, `change ${change} delivered under two ids`);
    assert.equal(changeOfId.get(d.id) ?? change, change, `record ${d.id} delivered as two changes`);
    idOf.set(change, d.id);
    changeOfId.set(d.id, change);
  }
  const firsts = new Map<number, number[]>();
  const first = new Set<string>();
  for (const d of seen) {
    if (first.has(d.id)) continue;
    first.add(d.id);
    firsts.set(d.key, [...(firsts.get(d.key) ?? []), d.version]);
  }
  for (const [key, versions] of firsts)
    assert.deepEqual(
      versions,
      [...versions].sort((a, b) => a - b),
      `row ${key}'s first deliveries out of order: ${versions.join(',')}`,
    );
  return changeOfId;
}

/** How many of the records each killed leader had delivered were delivered again after it, by another process. */
export function repeatsOf(seen: readonly Delivery[], rounds: readonly Round[]): number[] {
  return rounds.map((round) => {
    const mine = new Set<string>();
    const again = new Set<string>();
    for (const d of seen) {
      if (d.pid === round.pid) mine.add(d.id);
      else if (mine.has(d.id)) again.add(d.id);
    }
    return again.size;
  });
}
