// @test-lines: once - heavy: writers killed mid-transaction, once per CI run
// The change history is written in the write's own transaction: a writer process SIGKILLed between
// the write and its COMMIT leaves neither the write nor its change, and one killed anywhere else
// leaves both. Many rounds on a real PostgreSQL, a third of each kind: killed while a sink holds the
// transaction open right after the row and its change were written (the write announced there must
// be absent afterwards); killed at a random moment with that sink (the transaction path); killed at
// a random moment without it, where each write and its change are one autocommitted statement. After every round each row's version equals the
// number of its changes, and the newest change is at the row's version: never a write without its
// change, never a change without its write.
import assert from 'node:assert/strict';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, it } from 'node:test';
import { heavy } from '@kit/test-support/heavy';
import { describePostgres, PostgresServer } from '@kit/test-support/postgres';
import { spawnFixture } from '@kit/test-support/processes';

const ROUNDS = 18;
/** Writers running at once: each round's own row, so the rounds do not wait for each other's starts. */
const PARALLEL = 4;
const fixture = path.join(import.meta.dirname, 'fixtures', 'history-writer.ts');

interface Round {
  /** The last write announced inside its transaction, and the last one committed. */
  readonly inTx: string | undefined;
  readonly committed: string | undefined;
  readonly writes: number;
  /** Writes seen committed. */
  readonly commits: number;
}

/** Runs a writer; SIGKILLs it at the `atWrite`-th announced write (held inside its transaction until then), or after `afterMs`. */
async function runWriter(
  url: string,
  kill: { atWrite: number } | { afterMs: number; oneStatement: boolean },
): Promise<Round> {
  const { child, stderr, exited } = spawnFixture(fixture, {
    DATABASE_URL: url,
    HOLD_AT: 'atWrite' in kill ? String(kill.atWrite) : '0',
    ONE_STATEMENT: 'oneStatement' in kill && kill.oneStatement ? '1' : '0',
  });
  let inTx: string | undefined;
  let committed: string | undefined;
  let writes = 0;
  let commits = 0;
  let started = false;
  const lines = createInterface({ input: child.stdout });
  lines.on('line', (line) => {
    const [what, key, version] = line.split(' ');
    if (what === 'in-tx') {
      inTx = `${key}@${version}`;
      writes++;
      if ('atWrite' in kill && writes === kill.atWrite) child.kill('SIGKILL');
    } else if (what === 'committed') {
      committed = `${key}@${version}`;
      commits++;
      if (!started && 'afterMs' in kill) {
        started = true;
        setTimeout(() => child.kill('SIGKILL'), kill.afterMs).unref();
      }
    }
  });
  const deadline = sleep(90_000, undefined, { ref: false }).then(() => {
    child.kill('SIGKILL');
    throw new Error(`the writer did not finish within 90 s:\n${stderr()}`);
  });
  const { code } = await Promise.race([exited, deadline]);
  assert.equal(code, null, `the writer exited by itself (${code}):\n${stderr()}`);
  return { inTx, committed, writes, commits };
}

heavy(
  'a writer SIGKILLed between its write and COMMIT leaves neither the write nor its change',
  () => {
    describePostgres('change history under SIGKILL (PostgreSQL)', () => {
      let server: PostgresServer;

      before(async () => {
        server = await PostgresServer.start();
      });
      after(async () => {
        await server?.dispose();
      });

      const rows = async () =>
        (
          await server.sql(`select c.id::int as id, c.version::int as version, count(h.id)::int as changes, max(h.version_after)::int as newest
          from crash_counters c left join kit_changes h on h.entity = 'CrashCounter' and h.row_key = c.id::text group by c.id, c.version`)
        ).rows as Array<{ id: number; version: number; changes: number; newest: number | null }>;
      const orphans = async () =>
        Number(
          (
            await server.sql(
              `select count(*) as n from kit_changes h where h.entity = 'CrashCounter' and not exists (select 1 from crash_counters c where c.id::text = h.row_key and c.version >= h.version_after)`,
            )
          ).rows[0].n,
        );
      const stored = async (write: string) => {
        const [key, version] = write.split('@');
        return (
          Number(
            (
              await server.sql(
                `select count(*) as n from crash_counters where id = ${Number(key)} and version >= ${Number(version)}`,
              )
            ).rows[0].n,
          ) > 0
        );
      };

      it(`${ROUNDS} rounds: every row's version equals its number of changes, no change without its row; a write killed before COMMIT is absent`, async (t) => {
        const outcomes = {
          killedInTransaction: 0,
          killedAnywhere: 0,
          killedOneStatement: 0,
          writes: 0,
          oneStatementCommits: 0,
        };
        const round = async (round: number): Promise<void> => {
          const inTransaction = round % 3 === 0;
          const oneStatement = round % 3 === 2;
          const result = await runWriter(
            server.url,
            inTransaction
              ? { atWrite: 1 + Math.floor(Math.random() * 20) }
              : { afterMs: Math.random() * 150, oneStatement },
          );
          outcomes.writes += result.writes;
          if (oneStatement) {
            outcomes.killedOneStatement++;
            outcomes.oneStatementCommits += result.commits;
          }
          if (inTransaction) {
            assert.ok(result.inTx, `round ${round}: the writer announced a write`);
            // Killed while its transaction was held open: that write and its change never committed.
            assert.equal(
              await stored(result.inTx as string),
              false,
              `round ${round}: ${result.inTx} was killed before COMMIT but is stored`,
            );
            outcomes.killedInTransaction++;
          } else {
            if (!oneStatement) outcomes.killedAnywhere++;
            // What the writer saw committed is there.
            if (result.committed)
              assert.equal(
                await stored(result.committed),
                true,
                `round ${round}: ${result.committed} committed but absent`,
              );
          }
          // One statement each, so one snapshot: true whatever the other writers are doing.
          for (const row of await rows()) {
            assert.equal(
              row.changes,
              row.version,
              `round ${round}: row ${row.id} at version ${row.version} has ${row.changes} changes`,
            );
            assert.equal(
              row.newest,
              row.version,
              `round ${round}: row ${row.id} at version ${row.version}, newest change at ${row.newest}`,
            );
          }
          assert.equal(await orphans(), 0, `round ${round}: a change without its write`);
        };
        let next = 0;
        await Promise.all(
          Array.from({ length: PARALLEL }, async () => {
            for (let r = next++; r < ROUNDS; r = next++) await round(r);
          }),
        );
        t.diagnostic(JSON.stringify(outcomes));
        assert.ok(outcomes.writes > ROUNDS, JSON.stringify(outcomes));
        assert.ok(
          outcomes.oneStatementCommits > ROUNDS / 3,
          `the one-statement writers wrote: ${JSON.stringify(outcomes)}`,
        );
      });
    });
  },
);
