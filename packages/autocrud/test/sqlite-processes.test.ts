// @test-lines: every - node:sqlite: one file written by several processes
// Several real processes on one `sqlite:` file. SQLite is made for this (WAL: readers beside one
// writer, the write lock passed between processes), so Kit allows it, and this proves it: two
// service processes writing at once, with a third process taking the write lock now and then, lose
// no acknowledged write and leave a file whose integrity_check is ok; and while another process
// holds the lock for 6 s, a service's probes answer at once, reads answer, and writes answer 503
// busy at acquireTimeoutMs or 201 once the lock is free.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { post, startHost, stopHost, writeLoad, type Host } from './embedded-processes.ts';
import { heavyOnSqlite, openIntact } from './suite/engines.ts';

/** Another process that takes the file's write lock (BEGIN IMMEDIATE) for `holdMs`; resolves once it holds it, with its end. */
async function holdLock(file: string, holdMs: number): Promise<{ released: Promise<void> }> {
  const script = `
    const { DatabaseSync } = require('node:sqlite');
    const db = new DatabaseSync(${JSON.stringify(file)});
    db.exec('pragma busy_timeout = 10000; begin immediate');
    process.stdout.write('locked\\n');
    setTimeout(() => { db.exec('commit'); db.close(); }, ${holdMs});`;
  const child = spawn(process.execPath, ['--no-warnings', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the lock holder exited with ${code}`)));
  });
  // Not a bare promise: an async function returning one would wait for it.
  return { released: new Promise((resolve) => child.once('exit', () => resolve())) };
}

async function timed(url: string): Promise<{ status: number; ms: number }> {
  const asked = performance.now();
  const res = await fetch(url);
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - asked };
}

heavyOnSqlite('several processes on one sqlite: file', () => {
  describe('several processes on one sqlite: file', () => {
    let dir: string;
    const hosts: Host[] = [];
    before(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'kit-sqlite-processes-'));
    });
    after(async () => {
      for (const host of hosts) await stopHost(host, 'SIGKILL');
      await rm(dir, { recursive: true, force: true });
    });

    it('two service processes write at once while a third takes the lock now and then: every acknowledged write is there, integrity_check ok', async () => {
      const file = path.join(dir, 'shared.db');
      const a = await startHost(`sqlite:${file}`);
      const b = await startHost(`sqlite:${file}`);
      hosts.push(a, b);
      let stop = false;
      const loads = Promise.all([
        writeLoad(a, 'a', 4, () => stop),
        writeLoad(b, 'b', 4, () => stop),
      ]);
      // Three times, another process holds the write lock for 400 ms (below acquireTimeoutMs).
      for (let i = 0; i < 3; i++) {
        await sleep(700);
        await (
          await holdLock(file, 400)
        ).released;
      }
      await sleep(700);
      stop = true;
      const [fromA, fromB] = await loads;
      await stopHost(a);
      await stopHost(b);
      for (const [name, load] of [
        ['a', fromA],
        ['b', fromB],
      ] as const) {
        assert.ok(
          load.acknowledged.length > 20,
          `${name} acknowledged ${load.acknowledged.length}`,
        );
        assert.ok(
          load.refused.every((status) => status === 503),
          `${name} refused: ${load.refused.join(',')}`,
        );
      }
      const direct = openIntact(file);
      try {
        for (const [name, load] of [
          ['a', fromA],
          ['b', fromB],
        ] as const) {
          const rows = direct
            .prepare(`select seq from entries where writer = '${name}' order by seq`)
            .all()
            .map((r) => Number(r.seq));
          assert.deepEqual(
            rows,
            [...load.acknowledged].sort((x, y) => x - y),
            `every write ${name} acknowledged, and nothing else`,
          );
        }
      } finally {
        direct.close();
      }
    });

    it('while another process holds the write lock for 6 s: probes answer at once, reads answer, writes answer 503 busy at acquireTimeoutMs or 201 after the lock', async (t) => {
      const file = path.join(dir, 'held.db');
      const host = await startHost(`sqlite:${file}`, { ACQUIRE_TIMEOUT_MS: '2000' });
      hosts.push(host);
      assert.equal((await post(host, 'before', 0)).status, 201);
      const { released } = await holdLock(file, 6000);
      const held = performance.now();
      // Three writes at once, as in the report that found the freeze; then one more near the end of the hold.
      const writes = Promise.all([
        post(host, 'w', 1),
        post(host, 'w', 2),
        post(host, 'w', 3),
        sleep(5000).then(() => post(host, 'w', 4)),
      ]);
      const probes: Array<{ name: string; status: number; ms: number }> = [];
      while (performance.now() - held < 5500) {
        for (const name of ['/livez', '/healthz', '/api/entries/1'])
          probes.push({ name, ...(await timed(`${host.base}${name}`)) });
        await sleep(50);
      }
      await released;
      const answers = await writes;
      for (const name of ['/livez', '/healthz', '/api/entries/1']) {
        const mine = probes.filter((p) => p.name === name);
        const times = mine.map((p) => p.ms).sort((x, y) => x - y);
        const summary = `${name}: ${mine.length} probes, median ${Math.round(times[times.length >> 1] as number)} ms, slowest ${Math.round(times.at(-1) as number)} ms`;
        t.diagnostic(summary);
        assert.ok(
          mine.every((p) => p.status === 200),
          `${summary}: ${mine.map((p) => p.status).join(',')}`,
        );
        assert.ok(
          (times[times.length >> 1] as number) < 100 && (times.at(-1) as number) < 500,
          summary,
        );
      }
      t.diagnostic(
        `writes: ${answers.map((a) => `${a.status} in ${Math.round(a.ms)} ms`).join(', ')}`,
      );
      for (const answer of answers.slice(0, 3)) {
        assert.equal(answer.status, 503);
        assert.equal(answer.retryAfter, '1');
        assert.ok(
          answer.ms >= 1900 && answer.ms < 4000,
          `busy after acquireTimeoutMs: ${answer.ms} ms`,
        );
      }
      // Sent 5 s into the hold: it waited for the lock and got it when it was freed at 6 s.
      assert.equal(answers[3]?.status, 201);
      assert.equal((await post(host, 'after', 5)).status, 201);
    });
  });
});
