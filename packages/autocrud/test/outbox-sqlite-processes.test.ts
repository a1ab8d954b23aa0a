// The outbox across two real processes on one `sqlite:` file (test/fixtures/outbox-host.ts, no
// Redis): exactly one of them dispatches (the lease row in the file), and when it is SIGKILLed
// mid-delivery the other takes over within seconds and every record is delivered, a repeat only
// ever under the record's own id, each row's first deliveries in commit order.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, afterEach, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { heavy } from '../../../scripts/heavy-tests.ts';
import { sqliteAvailable } from '../src/mapper/sqlite.ts';

const root = path.resolve(import.meta.dirname, '../../..');
const fixture = path.join(import.meta.dirname, 'fixtures', 'outbox-host.ts');
const LEASE_MS = 2000;

interface Host {
  child: ChildProcess;
  base: string;
}

interface Delivery {
  id: string;
  key: number;
  version: number;
  attempt: number;
  pid: number;
}

interface Connection {
  prepare(sql: string): { all(): Array<Record<string, unknown>> };
  exec(sql: string): void;
  close(): void;
}

async function startHost(env: Record<string, string>): Promise<Host> {
  const child = spawn(process.execPath, ['--conditions=kit-source', '--import', 'tsx', fixture], { cwd: root, env: { ...process.env, REDIS_URL: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const lines = createInterface({ input: child.stdout! });
  const first = await Promise.race([
    new Promise<string>((resolve) => lines.once('line', resolve)),
    new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`host exited with ${code}:\n${stderr}`)))),
    sleep(90_000, undefined, { ref: false }).then(() => Promise.reject(new Error(`host did not start within 90 s:\n${stderr}`))),
  ]);
  return { child, base: `http://127.0.0.1:${(JSON.parse(first) as { port: number }).port}` };
}

async function kill(host: Host | undefined): Promise<void> {
  if (!host || host.child.exitCode !== null || host.child.signalCode !== null) return;
  const exited = new Promise((resolve) => host.child.once('exit', resolve));
  host.child.kill('SIGKILL');
  await exited;
}

async function leading(host: Host): Promise<boolean> {
  return ((await (await fetch(`${host.base}/outbox-stats`)).json()) as { leader: boolean }).leader;
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, withinMs: number): Promise<T> {
  const end = Date.now() + withinMs;
  for (;;) {
    const found = await probe().catch(() => undefined);
    if (found !== undefined && found !== false) return found;
    if (Date.now() > end) assert.fail(`timed out after ${withinMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

async function write(host: Host, method: string, url: string, body: unknown): Promise<{ status: number; id?: number }> {
  const res = await fetch(`${host.base}${url}`, { method, headers: { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }, body: JSON.stringify(body) });
  const answer = (await res.json().catch(() => ({}))) as { id?: number };
  return { status: res.status, ...answer };
}

const suite = sqliteAvailable() ? heavy : (name: string) => it(name, (t) => t.skip(`node:sqlite is not in Node ${process.version} (it is from 22.13 and 23.4)`));

suite('the outbox across processes on one sqlite: file', () => {
  describe('the outbox across processes on one sqlite: file', () => {
    let dir: string;
    let direct: Connection;
    let hosts: Host[] = [];
    before(() => {
      dir = mkdtempSync(path.join(tmpdir(), 'kit-outbox-sqlite-'));
      const { DatabaseSync } = process.getBuiltinModule('node:sqlite') as { DatabaseSync: new (file: string) => Connection };
      direct = new DatabaseSync(path.join(dir, 'outbox.db'));
      direct.exec('pragma journal_mode = wal; pragma busy_timeout = 10000');
      direct.exec('create table counters (id integer primary key autoincrement, name text not null, value integer not null, version integer not null default 1)');
    });
    afterEach(async () => {
      await Promise.all(hosts.map(kill));
      hosts = [];
    });
    after(() => {
      direct?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('exactly one process dispatches; SIGKILL of it mid-delivery: the other takes over within seconds and every record is delivered', async () => {
      const file = path.join(dir, 'delivered.jsonl');
      const env = { DATABASE_URL: `sqlite:${path.join(dir, 'outbox.db')}`, DELIVERED_FILE: file, DELIVERY_MS: '100' };
      hosts = [await startHost({ ...env, CREATE_TABLES: '1' })];
      hosts.push(await startHost(env));
      const [a, b] = hosts as [Host, Host];
      const leader = await until('a leader', async () => ((await leading(a)) ? a : (await leading(b)) ? b : undefined), 15_000);
      const survivor = leader === a ? b : a;
      // Exactly one leads, the same one, over a lease's length.
      for (let i = 0; i < 10; i++) {
        assert.deepEqual([await leading(leader), await leading(survivor)], [true, false], 'one process dispatches, the other waits');
        await sleep(LEASE_MS / 10);
      }

      // 30 rows, a create and 3 patches each, sent alternately to both processes.
      let n = 0;
      await Promise.all(
        Array.from({ length: 30 }, async (_, r) => {
          const created = await write([a, b][n++ % 2] as Host, 'POST', '/api/counters', { name: `row-${r}`, value: 0 });
          assert.equal(created.status, 201);
          for (let v = 1; v <= 3; v++) assert.equal((await write([a, b][n++ % 2] as Host, 'PATCH', `/api/counters/${created.id}`, { value: v })).status, 200);
        }),
      );
      const expected = 120;
      const records = () => direct.prepare("select id, 'pending' as state from kit_outbox order by seq").all() as Array<{ id: string; state: string }>;
      const deliveries = (): Delivery[] =>
        existsSync(file)
          ? readFileSync(file, 'utf8')
              .split('\n')
              .filter((l) => l !== '')
              .map((l) => JSON.parse(l) as Delivery)
          : [];
      // Mid-delivery: the subscriber has records the leader has not yet marked delivered.
      const unmarked = await until(
        'a delivery not yet marked',
        async () => {
          const pending = new Set(records().filter((r) => r.state === 'pending').map((r) => r.id));
          return deliveries().filter((d) => pending.has(d.id)).length || undefined;
        },
        30_000,
      );
      const killedAt = Date.now();
      await kill(leader);
      await until('the survivor leading', async () => (await leading(survivor)) || undefined, LEASE_MS + 8000);
      const takeoverMs = Date.now() - killedAt;

      await until('every record delivered', async () => (records().length === 0 && new Set(deliveries().map((d) => d.id)).size === expected) || undefined, 60_000);
      assert.equal(direct.prepare('select count(*) as n from kit_outbox_dead').all()[0]?.n, 0, 'no record dead');
      const seen = deliveries();
      assert.equal(new Set(seen.map((d) => d.id)).size, expected, 'one record per committed write reached the subscriber');
      const idOf = new Map<string, string>();
      for (const d of seen) {
        const change = `${d.key}@${d.version}`;
        assert.equal(idOf.get(change) ?? d.id, d.id, `change ${change} delivered under two ids`);
        idOf.set(change, d.id);
      }
      const firsts = new Map<number, number[]>();
      const first = new Set<string>();
      for (const d of seen) {
        if (first.has(d.id)) continue;
        first.add(d.id);
        firsts.set(d.key, [...(firsts.get(d.key) ?? []), d.version]);
      }
      for (const [key, versions] of firsts) assert.deepEqual(versions, [1, 2, 3, 4], `row ${key}'s first deliveries in commit order`);
      const repeats = seen.length - first.size;
      assert.ok(repeats > 0, `the ${unmarked} deliveries the killed leader had not marked were delivered again`);
      assert.ok(seen.some((d) => d.pid === survivor.child.pid), 'the survivor delivered');
      console.log(`sqlite: takeover ${takeoverMs} ms after SIGKILL; ${repeats} repeated deliveries, each under its record's id`);
    });
  });
});
