// @test-lines: every - node:sqlite: writers in several processes on one file
// The outbox across real processes on one `sqlite:` file (test/fixtures/outbox-host.ts, no
// Redis): exactly one of them dispatches (the lease row in the file), and, round after round while
// writers write through every process, the dispatching one is SIGKILLed mid-delivery: another
// takes over within the lease plus a margin, a replacement joins, and at the end every committed
// write (and every unanswered one the file shows committed) was delivered, a repeat only ever
// under the record's own id, each row's first deliveries in commit order.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { stopProcess } from '@kit/test-support/processes';
import { until } from '@kit/test-support/until';
import {
  assertEveryWriteDelivered,
  killRoundsUnderWrites,
  leading,
  repeatsOf,
  startOutboxHost,
  type Host,
} from './outbox-fleet.ts';
import { Writers } from './outbox-writers.ts';
import { heavyOnSqlite } from './suite/engines.ts';

const LEASE_MS = 2000;
const ROUNDS = 6;

interface Connection {
  prepare(sql: string): { all(): Array<Record<string, unknown>> };
  exec(sql: string): void;
  close(): void;
}

heavyOnSqlite('the outbox across processes on one sqlite: file', () => {
  describe('the outbox across processes on one sqlite: file', () => {
    let dir: string;
    let direct: Connection;
    const fleet: Host[] = [];
    /** The records still waiting for delivery: the one question this file asks of the outbox table. */
    const waitingIds = async () =>
      new Set(
        (direct.prepare('select id from kit_outbox').all() as Array<{ id: string }>).map(
          (r) => r.id,
        ),
      );

    before(() => {
      dir = mkdtempSync(path.join(tmpdir(), 'kit-outbox-sqlite-'));
      const { DatabaseSync } = process.getBuiltinModule('node:sqlite') as {
        DatabaseSync: new (file: string) => Connection;
      };
      direct = new DatabaseSync(path.join(dir, 'outbox.db'));
      direct.exec('pragma journal_mode = wal; pragma busy_timeout = 10000');
      direct.exec(
        'create table counters (id integer primary key autoincrement, name text not null, value integer not null, version integer not null default 1)',
      );
    });
    after(async () => {
      await Promise.all(fleet.map((h) => stopProcess(h)));
      direct?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it(`exactly one process dispatches; ${ROUNDS} rounds of SIGKILL of it mid-delivery while writers write: another takes over within the lease and every committed write is delivered`, async (t) => {
      const deliveredFile = path.join(dir, 'delivered.jsonl');
      const env = {
        DATABASE_URL: `sqlite:${path.join(dir, 'outbox.db')}`,
        REDIS_URL: '',
        DELIVERED_FILE: deliveredFile,
        DELIVERY_MS: '30',
      };
      fleet.push(await startOutboxHost({ ...env, CREATE_TABLES: '1' }));
      fleet.push(
        ...(await Promise.all([startOutboxHost(env), startOutboxHost(env), startOutboxHost(env)])),
      );
      const { value: leader } = await until(
        'a leader',
        async () =>
          (await Promise.all(fleet.map(async (h) => ((await leading(h)) ? h : undefined)))).find(
            (h) => h !== undefined,
          ),
        { timeoutMs: 15_000, retryErrors: true },
      );
      // Exactly one leads, the same one, over a lease's length.
      for (let i = 0; i < 10; i++) {
        assert.deepEqual(
          await Promise.all(fleet.map(leading)),
          fleet.map((h) => h === leader),
          'one process dispatches, the others wait',
        );
        await sleep(LEASE_MS / 10);
      }

      const writers = new Writers(() => fleet, { writers: 4, patches: 5, pauseMs: 20 });
      const rounds = await killRoundsUnderWrites(writers, {
        rounds: ROUNDS,
        fleet,
        minimum: 3,
        start: () => startOutboxHost(env),
        waitingIds,
        deliveredFile,
        leaseMs: LEASE_MS,
        log: (line) => t.diagnostic(line),
      });
      const seen = await assertEveryWriteDelivered({
        writers,
        table: async () =>
          direct.prepare('select id, name, version from counters').all() as Array<{
            id: number;
            name: string;
            version: number;
          }>,
        waitingIds,
        deliveredFile,
      });
      const repeats = repeatsOf(seen, rounds);
      const total = seen.length - new Set(seen.map((d) => d.id)).size;
      t.diagnostic(
        `sqlite: takeovers (ms): ${rounds.map((r) => r.takeoverMs).join(', ')}; unmarked at each kill: ${rounds.map((r) => r.unmarked).join(', ')}; delivered again per round: ${repeats.join(', ')}`,
      );
      t.diagnostic(
        `sqlite: ${writers.committed} writes answered 2xx, ${writers.unanswered} unanswered (${writers.unknownCreates.length} creates), ${new Set(seen.map((d) => d.id)).size} records, ${total} repeated deliveries, each under its record's id`,
      );
      assert.ok(
        total > 0,
        'the kills landed mid-delivery: records the killed leaders had delivered were delivered again',
      );
    });
  });
});
