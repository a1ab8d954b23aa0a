// @test-lines: every - PGlite: its WASM engine, worker thread and directory lock on this line
// Kit's own PGlite (`pglite:` and `pglite:<dir>`): it starts as a warm-up of useKit in a worker
// thread (a host that listens first answers /livez and /healthz `startup` meanwhile), a path it
// cannot use fails start-up with a sentence naming it, a directory is locked to one app of one
// process, and a request that waits for the single session longer than acquireTimeoutMs answers
// 503 busy while the check reports the database busy, not down. The conformance suites run on a
// host-made instance (pglite.test.ts); the differential test here holds the worker's answers to
// those of the host-made instance. Several processes on one directory: pglite-processes.test.ts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, hostname } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PGlite } from '@electric-sql/pglite';
import { Type } from '@sinclair/typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, useKit, type KitOption } from '@kit/core';
import {
  addKitAutoCrud,
  AutoCrud,
  defineEntity,
  type KitAutoCrud,
  type KitAutoCrudOptions,
} from '@kit/autocrud';
import { LOCK_FILE, lockDirectory } from '../src/mapper/engines/pglite/directory-lock.ts';
import { freshPGlite, freshPGliteIn } from './suite/engines.ts';
import { until } from '@kit/test-support/until';

const Item = defineEntity({
  name: 'Item',
  table: 'items',
  schema: Type.Object({
    id: Type.Integer(),
    name: Type.String({ maxLength: 100 }),
    price: Type.Number(),
    qty: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
    code: Type.Optional(Type.Union([Type.String({ format: 'uuid' }), Type.Null()])),
    active: Type.Boolean(),
  }),
  writable: ['name', 'price', 'qty', 'code', 'active'],
});
@AutoCrud(Item)
class ItemsEndpoint {}

interface Started {
  app: FastifyInstance;
  crud: KitAutoCrud;
  lines: Array<{ level: number; msg: string; [key: string]: unknown }>;
}

function capture(): { stream: Writable; lines: Started['lines'] } {
  const lines: Started['lines'] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as Started['lines'][number]);
      done();
    },
  });
  return { stream, lines };
}

/** An app on `url`, not yet used: the caller runs useKit (and maybe listen) itself. */
function build(
  url: string | PGlite,
  options: KitAutoCrudOptions = {},
  configure?: (opt: KitOption) => void,
): Started {
  const { stream, lines } = capture();
  const app = Fastify({ logger: { level: 'info', stream } });
  addKit(app, [ItemsEndpoint], (opt) => {
    opt.healthCheckDetailLevel = 'Full';
    configure?.(opt);
  });
  const crud = addKitAutoCrud(app, url, { createTables: true, ...options });
  return { app, crud, lines };
}

async function start(url: string | PGlite, options: KitAutoCrudOptions = {}): Promise<Started> {
  const started = build(url, options);
  await useKit(started.app);
  return started;
}

async function startupError(url: string): Promise<Error & { code?: string }> {
  const { app } = build(url);
  try {
    await useKit(app);
  } catch (err) {
    await app.close();
    return err as Error & { code?: string };
  }
  await app.close();
  assert.fail(`start-up on ${url} did not fail`);
}

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'kit-pglite-engine-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("PGlite start-up: a warm-up of useKit, off the service's thread", () => {
  it('a host that listens before useKit settles answers /livez at once and /healthz 503 `startup` until the database is ready', async () => {
    const { app, crud } = build('pglite:');
    const ready = useKit(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      // PGlite's start (in memory: its saved fresh cluster, else initdb) is still running in its thread.
      assert.equal(crud.available, false, 'listen() did not wait for the database');
      const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
      assert.equal((await fetch(`${base}/livez`)).status, 200);
      const health = await fetch(`${base}/healthz`);
      assert.equal(health.status, 503);
      assert.match(await health.text(), /"startup"/);
      await ready;
      assert.equal(crud.available, true);
      assert.equal((await fetch(`${base}/healthz`)).status, 200);
      const created = await fetch(`${base}/api/items`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'first', price: 1, active: true }),
      });
      assert.equal(created.status, 201, await created.text());
    } finally {
      await app.close();
    }
  });

  it('a start slower than 80% of warmupTimeoutMs does not fail start-up: it goes on with a warning, and calls wait for the first start', async () => {
    // PGlite's start (a worker thread, then the saved cluster or initdb) takes far over 80% of 200 ms.
    const { app, crud, lines } = build('pglite:', {}, (opt) => {
      opt.warmupTimeoutMs = 200;
    });
    try {
      await useKit(app);
      assert.equal(crud.available, false);
      const warning = lines.find((l) => /still starting; serving anyway/.test(l.msg));
      assert.ok(warning, JSON.stringify(lines));
      assert.equal(warning.level, 40);
      assert.equal(warning.waitedMs, 160);
      assert.equal(
        (await app.inject('/api/items')).statusCode,
        200,
        'a request waits for the first start',
      );
      await until(
        'the first start finished',
        () => lines.some((l) => /start finished/.test(l.msg)),
        {
          timeoutMs: 60_000,
        },
      );
    } finally {
      await app.close();
    }
  });

  it('an in-memory start loads the saved fresh cluster; a damaged one is noticed, replaced, and start-up goes on', async () => {
    const first = await start('pglite:');
    // How PGlite started, once it has (on a loaded machine start-up may go on before: see above).
    const how = async (s: Started) =>
      (
        await until('PGlite started', () => s.lines.find((l) => /PGlite started/.test(l.msg)), {
          timeoutMs: 60_000,
          intervalMs: 50,
        })
      ).value.snapshot;
    assert.ok(['loaded', 'saved'].includes(String(await how(first))), JSON.stringify(first.lines));
    await first.app.close();
    const second = await start('pglite:');
    assert.equal(await how(second), 'loaded');
    await second.app.close();
    // The cache sits beside the installed PGlite; a truncated copy must not start (nor crash) anything.
    const { snapshotFile } = await import('../src/mapper/engines/pglite/snapshot.ts');
    const file = (await snapshotFile()) as string;
    const saved = readFileSync(file);
    writeFileSync(file, saved.subarray(0, saved.length >> 1));
    const third = await start('pglite:');
    assert.equal(await how(third), 'saved');
    assert.equal(
      (
        await third.app.inject({
          method: 'POST',
          url: '/api/items',
          payload: { name: 'x', price: 2, active: false },
        })
      ).statusCode,
      201,
    );
    await third.app.close();
    assert.ok(readFileSync(file).length >= saved.length * 0.5, 'a whole cluster saved again');
  });

  it("the worker answers exactly what a PGlite instance on the host's thread answers (types, errors, constraints)", async () => {
    const host = await freshPGlite();
    // One cursor key for both, so that their `next` cursors compare too.
    const cursorSecret = 'differential-test-cursor-secret-0123456789';
    const inThread = await start(host, { cursorSecret });
    const inWorker = await start('pglite:', { cursorSecret });
    const script: Array<{
      method: 'GET' | 'POST' | 'PUT' | 'DELETE';
      url: string;
      payload?: object;
    }> = [
      {
        method: 'POST',
        url: '/api/items',
        payload: {
          name: 'a',
          price: 1.25,
          qty: 3,
          code: '4b1d0b6e-2f3c-4a5e-9d7a-0c1e2f3a4b5c',
          active: true,
        },
      },
      {
        method: 'POST',
        url: '/api/items',
        payload: { name: 'b', price: 0.1, qty: null, active: false },
      },
      {
        method: 'POST',
        url: '/api/items',
        payload: { name: 'c', price: 9007199254740991, qty: 2147483647, active: true },
      },
      {
        method: 'POST',
        url: '/api/items',
        payload: { name: 'd', price: 1, qty: 2147483648, active: true },
      },
      { method: 'GET', url: '/api/items?sort=-price' },
      { method: 'GET', url: '/api/items?filter[name][like]=a&filter[active]=true' },
      { method: 'GET', url: '/api/items/1' },
      { method: 'PUT', url: '/api/items/2', payload: { name: 'b2', price: 2, active: true } },
      { method: 'DELETE', url: '/api/items/3' },
      { method: 'GET', url: '/api/items/3' },
      { method: 'GET', url: '/api/items?pageSize=2' },
    ];
    try {
      for (const step of script) {
        const a = await inThread.app.inject(step);
        const b = await inWorker.app.inject(step);
        assert.equal(b.statusCode, a.statusCode, `${step.method} ${step.url}: ${b.body}`);
        const strip = (body: string) => body.replace(/"correlationId":"[^"]+"/, '');
        assert.equal(strip(b.body), strip(a.body), `${step.method} ${step.url}`);
      }
    } finally {
      await inThread.app.close();
      await inWorker.app.close();
      await host.close();
    }
  });
});

describe('a pglite: path PGlite cannot use fails start-up naming it and what is wrong', () => {
  for (const [label, make, pattern] of [
    [
      'a regular file',
      () => {
        const file = path.join(dir, 'a-file');
        writeFileSync(file, 'not a database');
        return file;
      },
      /a-file is a regular file, not a directory/,
    ],
    [
      'a path under a regular file',
      () => {
        writeFileSync(path.join(dir, 'b-file'), 'x');
        return path.join(dir, 'b-file', 'data');
      },
      /a part of the path is a file, not a directory/,
    ],
    [
      'a non-empty directory holding no database',
      () => {
        const d = path.join(dir, 'project');
        mkdirSync(d);
        writeFileSync(path.join(d, 'package.json'), '{}');
        return d;
      },
      /is not empty \(package\.json\) and holds no PostgreSQL database/,
    ],
  ] as const) {
    it(label, async () => {
      const target = make();
      const err = await startupError(`pglite:${target}`);
      assert.equal(err.code, 'KIT_ERR_AUTOCRUD_ENGINE', err.message);
      assert.ok(err.message.includes(`pglite:${target}`), err.message);
      assert.match(err.message, pattern);
      assert.doesNotMatch(err.message, /\[object Object\]/);
    });
  }

  it('a directory of another PostgreSQL version: PostgreSQL\'s own reason, not "[object Object]" or "Aborted()"', async () => {
    const data = path.join(dir, 'old-version');
    const made = await start(`pglite:${data}`);
    await made.app.close();
    writeFileSync(path.join(data, 'PG_VERSION'), '17\n');
    const err = await startupError(`pglite:${data}`);
    assert.equal(err.code, 'KIT_ERR_AUTOCRUD_ENGINE', err.message);
    assert.ok(err.message.includes(`pglite:${data}`), err.message);
    assert.match(err.message, /initialized by PostgreSQL version 17/);
    assert.equal(existsSync(path.join(data, LOCK_FILE)), false, 'a failed start leaves no lock');
  });

  it('the regular file is left as it was', async () => {
    const file = path.join(dir, 'precious.txt');
    writeFileSync(file, 'keep me');
    await startupError(`pglite:${file}`);
    assert.equal(readFileSync(file, 'utf8'), 'keep me');
  });
});

/** A lock file as another process would have written it. */
function lockOf(fields: Record<string, unknown>): string {
  return JSON.stringify({
    host: hostname(),
    since: new Date().toISOString(),
    token: 'other',
    ...fields,
  });
}

/** The start time field of /proc/<pid>/stat, as the lock records it. */
function startedOf(pid: number): string | undefined {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

const linux = existsSync('/proc/self/stat');

describe('the pglite:<dir> lock in one process', () => {
  it('a second app on the directory is refused with KIT_ERR_AUTOCRUD_LOCKED naming the directory and this process; the first keeps serving; closed, it frees the directory', async () => {
    const data = path.join(dir, 'one-dir');
    const first = await start(`pglite:${data}`);
    const created = await first.app.inject({
      method: 'POST',
      url: '/api/items',
      payload: { name: 'kept', price: 1, active: true },
    });
    assert.equal(created.statusCode, 201);
    // A new directory gets the saved fresh cluster (the in-memory starts above saved it), not initdb.
    const how = (s: Started) => s.lines.find((l) => /PGlite started/.test(l.msg))?.snapshot;
    assert.equal(how(first), 'loaded', JSON.stringify(first.lines));
    const err = await startupError(`pglite:${data}`);
    assert.equal(err.code, 'KIT_ERR_AUTOCRUD_LOCKED');
    assert.ok(err.message.includes(`pglite:${data}`), err.message);
    assert.match(err.message, new RegExp(`already open in this process \\(pid ${process.pid}\\)`));
    assert.equal((await first.app.inject('/api/items/1')).statusCode, 200);
    assert.equal(
      (
        await first.app.inject({
          method: 'POST',
          url: '/api/items',
          payload: { name: 'after', price: 1, active: true },
        })
      ).statusCode,
      201,
    );
    await first.app.close();
    assert.equal(existsSync(path.join(data, LOCK_FILE)), false, 'closing removes the lock');
    const again = await start(`pglite:${data}`);
    assert.equal((await again.app.inject('/api/items')).json<{ total: number }>().total, 2);
    assert.equal(how(again), 'none', 'a directory holding a database is opened');
    await again.app.close();
  });

  // The stale-lock rules, on the lock itself (no PGlite needs starting for them).
  function take(
    name: string,
    holder: Record<string, unknown>,
  ): { data: string; file: string; attempt: () => ReturnType<typeof lockDirectory> } {
    const data = path.join(dir, name);
    mkdirSync(data);
    const file = path.join(data, LOCK_FILE);
    writeFileSync(file, lockOf(holder));
    return { data, file, attempt: () => lockDirectory(data, `pglite:${data}`) };
  }

  it('a lock whose process has exited is taken over', async () => {
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
    const { file, attempt } = take('dead-holder', {
      pid: Number(gone.stdout.toString()),
      ...(await ids()),
    });
    const lock = attempt();
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).pid, process.pid);
    lock.release();
    assert.equal(existsSync(file), false);
  });

  it(
    'a lock whose pid now belongs to another process (pid reuse) is taken over; one naming that live process is not',
    { skip: !linux && 'needs /proc' },
    async () => {
      // A live process that is not Kit: its pid with another start time is a holder that died, its pid reused since.
      const other = process.ppid;
      const reused = take('reused-pid', {
        pid: other,
        ...(await ids()),
        started: String(Number(startedOf(other)) + 1),
      });
      reused.attempt().release();
      const live = take('live-pid', { pid: other, ...(await ids()), started: startedOf(other) });
      assert.throws(live.attempt, (err: Error & { code?: string }) => {
        assert.equal(err.code, 'KIT_ERR_AUTOCRUD_LOCKED');
        assert.ok(
          err.message.includes(
            `pglite:${live.data} is in use by process ${other} on host ${hostname()}`,
          ),
          err.message,
        );
        return true;
      });
      assert.equal(
        JSON.parse(readFileSync(live.file, 'utf8')).pid,
        other,
        "a live holder's lock is left alone",
      );
    },
  );

  it('a lock from before a reboot is taken over', { skip: !linux && 'needs /proc' }, async () => {
    const { attempt } = take('rebooted', {
      pid: process.ppid,
      bootId: 'a-boot-before',
      pidNamespace: (await ids()).pidNamespace,
    });
    attempt().release();
  });

  it('a lock of another machine or container counts while its heartbeat is fresh, and is taken over 30 s after it stopped', async () => {
    const { file, attempt } = take('other-container', {
      pid: 1,
      host: 'pod-7f9c',
      bootId: 'another-boot',
      pidNamespace: 'pid:[1]',
    });
    assert.throws(attempt, (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_AUTOCRUD_LOCKED');
      assert.match(err.message, /in use by process 1 on host pod-7f9c/);
      assert.match(err.message, /taken over after 30 s without its heartbeat \(last 0 s ago\)/);
      return true;
    });
    const old = new Date(Date.now() - 31_000);
    utimesSync(file, old, old);
    attempt().release();
  });

  it('a lock file still being written (empty, fresh) counts as held; an empty one 5 s old is taken over', () => {
    const data = path.join(dir, 'being-written');
    mkdirSync(data);
    const file = path.join(data, LOCK_FILE);
    writeFileSync(file, '');
    assert.throws(
      () => lockDirectory(data, `pglite:${data}`),
      /in use by a process that is just starting/,
    );
    const old = new Date(Date.now() - 6_000);
    utimesSync(file, old, old);
    lockDirectory(data, `pglite:${data}`).release();
  });

  it('a PGlite instance the host made is not locked (Kit cannot know who else opened its directory)', async () => {
    const data = path.join(dir, 'host-made');
    const host = await freshPGliteIn(data);
    const started = await start(host);
    assert.equal(existsSync(path.join(data, LOCK_FILE)), false);
    await started.app.close();
    await host.close();
  });
});

/** This process's boot id and pid namespace, as the lock writes them (absent where there is no /proc). */
async function ids(): Promise<Record<string, string>> {
  if (!linux) return {};
  const { readlinkSync } = await import('node:fs');
  return {
    bootId: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
    pidNamespace: readlinkSync('/proc/self/ns/pid'),
  };
}

describe("PGlite's single session under a long statement", () => {
  const ROWS = 200_000;
  let busy: Started;
  before(async () => {
    // A table big enough that a contains-filter takes a while; written before Kit opens the directory.
    const data = path.join(dir, 'big');
    const direct = await freshPGliteIn(data);
    await direct.exec(
      `create table items (id bigint generated by default as identity primary key, name text not null, price double precision not null, qty integer, code uuid, active boolean not null default true);
       insert into items (name, price) select md5(i::text), i from generate_series(1, ${ROWS}) i;`,
    );
    await direct.close();
    busy = await start(`pglite:${data}`, { acquireTimeoutMs: 100 });
  });
  after(async () => {
    await busy?.app.close();
  });

  it('a request that waits for the session longer than acquireTimeoutMs answers 503 busy with Retry-After: 1; the check says degraded (200), no line calls the database unavailable; all answer again once it is free', async () => {
    const { app, lines } = busy;
    const slow = '/api/items?filter[name][like]=zzzz';
    let holding = true;
    // Back-to-back slow lists keep the one session taken.
    const hog = (async () => {
      const statuses: number[] = [];
      while (holding) statuses.push((await app.inject(slow)).statusCode);
      return statuses;
    })();
    await sleep(50);
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        app.inject({ method: 'GET', url: `/api/items/${i + 1}` }),
      ),
    );
    const health = await app.inject('/healthz');
    const livez = await app.inject('/livez');
    holding = false;
    const hogged = await hog;
    const busyAnswers = answers.filter((a) => a.statusCode === 503);
    assert.ok(
      busyAnswers.length > 0,
      `some requests waited past acquireTimeoutMs: ${answers.map((a) => a.statusCode).join(',')}`,
    );
    for (const a of answers) assert.ok(a.statusCode === 200 || a.statusCode === 503, a.body);
    for (const a of busyAnswers) {
      assert.equal(a.headers['retry-after'], '1', a.body);
      assert.match(a.json<{ detail: string }>().detail, /busy/);
    }
    assert.ok(
      hogged.every((s) => s === 200 || s === 503),
      hogged.join(','),
    );
    assert.equal(livez.statusCode, 200, livez.body);
    assert.equal(health.statusCode, 200, `the check while the session is taken: ${health.body}`);
    const database = health.json<{
      checks: Record<string, { status: string; description?: string }>;
    }>().checks.database;
    assert.ok(
      database?.status === 'degraded' || database?.status === 'healthy',
      JSON.stringify(database),
    );
    assert.equal(
      lines.filter((l) => /unavailable/i.test(l.msg)).length,
      0,
      JSON.stringify(lines.filter((l) => /unavailable/i.test(l.msg))),
    );
    assert.equal(busy.crud.available, true);
    // A list refused busy on one of its two statements (page, count) may leave the other queued or
    // running for a moment: once that is done, the session is free and everything answers.
    const { value: again } = await until(
      'an answer other than 503 busy',
      async () => {
        const answer = await app.inject('/api/items/1');
        return answer.statusCode !== 503 && answer;
      },
      { timeoutMs: 5000, intervalMs: 100 },
    );
    assert.equal(again.statusCode, 200, again.body);
    const after = await app.inject('/healthz');
    assert.equal(
      after.json<{ checks: Record<string, { status: string }> }>().checks.database?.status,
      'healthy',
      after.body,
    );
  });

  it("the service's event loop is free while PGlite runs a statement: /livez answers during it", async () => {
    const { app } = busy;
    await app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    let running = true;
    const slow = (async () => {
      while (running)
        await fetch(`${base}/api/items?filter[name][like]=zzzz&count=false`).then((r) =>
          r.arrayBuffer(),
        );
    })();
    await sleep(30);
    const probes: number[] = [];
    for (let i = 0; i < 20; i++) {
      const asked = performance.now();
      assert.equal((await fetch(`${base}/livez`)).status, 200);
      probes.push(performance.now() - asked);
      await sleep(10);
    }
    running = false;
    await slow;
    // With PGlite on the service's thread each probe would wait for the statement running (hundreds of ms).
    probes.sort((a, b) => a - b);
    assert.ok(
      (probes[10] as number) < 100,
      `median /livez ${probes[10]} ms while PGlite ran statements`,
    );
  });
});
