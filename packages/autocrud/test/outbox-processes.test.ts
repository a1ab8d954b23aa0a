// The outbox across real processes (test/fixtures/outbox-host.ts) on a real PostgreSQL and a real
// redis-server: the dispatching instance SIGKILLed mid-delivery (the other takes over within
// seconds, every record is delivered, a repeat only ever under the record's own id, the Redis
// Stream holds each record once), a subscriber that fails 3 times before it succeeds (delivered
// once to it, the retries counted), and 2 instances under 50 concurrent writers for 10 s (every
// committed write exactly one record, delivered once to each subscriber, in order per row).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, afterEach, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { heavy } from '../../../scripts/heavy-tests.ts';
import { RedisServer, skipRedis } from '../../store-redis/test/redis-server.ts';
import { PostgresServer, skipPostgres } from './postgres-server.ts';

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

async function startHost(env: Record<string, string>): Promise<Host> {
  const child = spawn(process.execPath, ['--conditions=kit-source', '--import', 'tsx', fixture], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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

async function stats(host: Host): Promise<{ leader: boolean; delivered: number; retries: number; deadLettered: number }> {
  return (await fetch(`${host.base}/outbox-stats`)).json() as Promise<{ leader: boolean; delivered: number; retries: number; deadLettered: number }>;
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

async function write(host: Host, method: string, url: string, body: unknown): Promise<{ status: number; id?: number; version?: number }> {
  const res = await fetch(`${host.base}${url}`, { method, headers: { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }, body: JSON.stringify(body) });
  const answer = (await res.json().catch(() => ({}))) as { id?: number; version?: number };
  return { status: res.status, ...answer };
}

const skip = skipPostgres || skipRedis;

heavy('the outbox across processes on PostgreSQL and Redis', () => {
  if (skip) {
    it('the outbox across processes', (t) => t.skip(skip));
    return;
  }
  describe('the outbox across processes on PostgreSQL and Redis', () => {
    let database: PostgresServer;
    let redis: RedisServer;
    let raw: Redis;
    let dir: string;
    let hosts: Host[] = [];
    let env: Record<string, string>;
    const deliveredFile = () => env.DELIVERED_FILE as string;
    const deliveries = (): Delivery[] =>
      existsSync(deliveredFile())
        ? readFileSync(deliveredFile(), 'utf8')
            .split('\n')
            .filter((l) => l !== '')
            .map((l) => JSON.parse(l) as Delivery)
        : [];
    const records = async () => (await database.sql("select id, row_key, version_after, 'pending' as state from kit_outbox order by seq")).rows as Array<{ id: string; row_key: string; version_after: number; state: string }>;
    const stream = async () => (await raw.xrange(`${env.KEY_PREFIX}{changes}`, '-', '+')).map(([, fields]) => fields[1] as string);

    before(async () => {
      [database, redis] = await Promise.all([PostgresServer.start(), RedisServer.start()]);
      raw = new Redis(redis.url);
      dir = mkdtempSync(path.join(tmpdir(), 'kit-outbox-processes-'));
    });
    after(async () => {
      raw?.disconnect();
      await redis?.dispose();
      await database?.dispose();
      rmSync(dir, { recursive: true, force: true });
    });
    afterEach(async () => {
      await Promise.all(hosts.map(kill));
      hosts = [];
    });

    /** Fresh tables, stream and file; the first host makes the outbox's tables, the others start after it. */
    async function fleet(count: number, extra: Record<string, string> = {}): Promise<Host[]> {
      await database.sql('drop table if exists counters, kit_outbox, kit_outbox_dead, kit_outbox_lease');
      await database.sql('create table counters (id bigint generated by default as identity primary key, name text not null, value bigint not null, version bigint not null default 1)');
      env = { DATABASE_URL: database.url, REDIS_URL: redis.url, KEY_PREFIX: `outbox:${randomUUID()}:`, DELIVERED_FILE: path.join(dir, `${randomUUID()}.jsonl`), ...extra };
      hosts = [await startHost({ ...env, CREATE_TABLES: '1' })];
      hosts.push(...(await Promise.all(Array.from({ length: count - 1 }, () => startHost(env)))));
      return hosts;
    }

    /** Every record delivered: to the file subscriber (a repeat only under the record's own id, first deliveries in order per row) and to the stream once. */
    async function assertAllDelivered(expected: number): Promise<Delivery[]> {
      await until('every record delivered', async () => ((await records()).length === 0 && new Set(deliveries().map((d) => d.id)).size === expected) || undefined, 60_000);
      assert.equal(Number((await database.sql('select count(*) as n from kit_outbox_dead')).rows[0].n), 0, 'no record dead');
      const ids = new Set(deliveries().map((d) => d.id));
      const seen = deliveries();
      assert.deepEqual(new Set(seen.map((d) => d.id)), ids, 'every record reached the subscriber, and nothing else did');
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
      for (const [key, versions] of firsts) assert.deepEqual(versions, [...versions].sort((a, b) => a - b), `row ${key} delivered out of order: ${versions.join(',')}`);
      const entries = await stream();
      assert.equal(entries.length, expected, 'the stream holds each record once');
      assert.deepEqual(new Set(entries), ids);
      return seen;
    }

    it('SIGKILL of the dispatching instance mid-delivery: the other takes over within seconds and every record is delivered', async () => {
      const [a, b] = await fleet(2, { DELIVERY_MS: '150' });
      const leader = await until('a leader', async () => ((await stats(a as Host)).leader ? (a as Host) : (await stats(b as Host)).leader ? (b as Host) : undefined), 15_000);
      const survivor = leader === a ? (b as Host) : (a as Host);
      // 40 rows, a create and 5 patches each, sent alternately to both instances.
      let n = 0;
      await Promise.all(
        Array.from({ length: 40 }, async (_, r) => {
          const created = await write([a, b][n++ % 2] as Host, 'POST', '/api/counters', { name: `row-${r}`, value: 0 });
          assert.equal(created.status, 201);
          for (let v = 1; v <= 5; v++) assert.equal((await write([a, b][n++ % 2] as Host, 'PATCH', `/api/counters/${created.id}`, { value: v })).status, 200);
        }),
      );
      // Mid-delivery: the subscriber has records the leader has not yet marked delivered.
      const unmarked = await until(
        'a delivery not yet marked',
        async () => {
          const pendingIds = new Set((await records()).filter((r) => r.state === 'pending').map((r) => r.id));
          return deliveries().filter((d) => pendingIds.has(d.id)).length || undefined;
        },
        30_000,
      );
      const pending = (await records()).filter((r) => r.state !== 'delivered').length;
      const killedAt = Date.now();
      await kill(leader);
      await until('the survivor leading', async () => (await stats(survivor)).leader || undefined, LEASE_MS + 8000);
      const takeoverMs = Date.now() - killedAt;
      assert.ok(takeoverMs < LEASE_MS + 8000, `takeover took ${takeoverMs} ms`);
      const seen = await assertAllDelivered(240);
      const repeats = seen.length - new Set(seen.map((d) => d.id)).size;
      assert.ok(repeats > 0, `the ${unmarked} deliveries the killed leader had not marked were delivered again`);
      console.log(`takeover ${takeoverMs} ms after SIGKILL; ${pending} records were pending; ${repeats} repeated deliveries, each under its record's id`);
    });

    it('a subscriber failing 3 times then succeeding gets each record once, and the retries are counted', async () => {
      const [host] = await fleet(1, { FAIL_FIRST: '3' });
      for (let r = 0; r < 10; r++) assert.equal((await write(host as Host, 'POST', '/api/counters', { name: `f-${r}`, value: r })).status, 201);
      const seen = await assertAllDelivered(10);
      assert.equal(seen.length, 10, 'once each');
      assert.ok(seen.every((d) => d.attempt === 4));
      const counted = await stats(host as Host);
      assert.equal(counted.retries, 30);
      assert.equal(counted.deadLettered, 0);
      assert.equal(counted.delivered, 10);
    });

    it('2 instances, 50 concurrent writers for 10 s: each committed write is one record, delivered once to each subscriber, in order per row', async () => {
      const [a, b] = await fleet(2);
      const committed: Array<{ key: number; version: number }> = [];
      const end = Date.now() + 10_000;
      let n = 0;
      await Promise.all(
        Array.from({ length: 50 }, async (_, w) => {
          const created = await write([a, b][w % 2] as Host, 'POST', '/api/counters', { name: `w-${w}`, value: 0 });
          assert.equal(created.status, 201);
          committed.push({ key: created.id as number, version: 1 });
          for (let v = 1; Date.now() < end; v++) {
            const res = await write([a, b][n++ % 2] as Host, 'PATCH', `/api/counters/${created.id}`, { value: v });
            if (res.status === 200) committed.push({ key: created.id as number, version: res.version as number });
            else assert.ok(res.status === 503, `unexpected ${res.status}`);
          }
        }),
      );
      const seen = await assertAllDelivered(committed.length);
      assert.equal(seen.length, committed.length, 'no repeat without a crash');
      const delivered = new Set(seen.map((d) => `${d.key}@${d.version}`));
      for (const c of committed) assert.ok(delivered.has(`${c.key}@${c.version}`), `committed ${c.key}@${c.version} not delivered`);
      const byRow = new Map<number, number[]>();
      for (const d of seen) byRow.set(d.key, [...(byRow.get(d.key) ?? []), d.version]);
      for (const [key, versions] of byRow) assert.deepEqual(versions, Array.from({ length: versions.length }, (_, i) => i + 1), `row ${key}`);
      console.log(`${committed.length} committed writes in 10 s from 50 writers on 2 instances, each delivered once to the subscriber and the stream`);
    });
  });
});
