// @test-lines: every - signals and processes on this line
// One owner of process signals and one order of phases (lifecycle/): the phases are the only
// Fastify lifecycle hooks any package adds, an app is ready and closes in the documented order
// (ready, then unready, flush, release) however it is closed, and two Kit apps in one process
// stay independent: one's shutdown neither cuts the other's drain short nor loses its audit queue,
// and one closing leaves the other's signal handling in place.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { addKit, useKit, type AuditLogEntry, type IAuditSink } from '@kit/core';
import { onPhase } from '@kit/core/extend';
import { startProcess, stopProcess, type Exit } from '@kit/test-support/processes';
import { until } from '@kit/test-support/until';

const hostFile = fileURLToPath(new URL('./fixtures/lifecycle/two-apps-host.ts', import.meta.url));

describe('the owner of process signals', () => {
  it('is lifecycle/signals.ts alone: no other source file of any package listens to the process', async () => {
    const root = fileURLToPath(new URL('../../', import.meta.url));
    const listening: string[] = [];
    for (const pkg of await readdir(root)) {
      const src = path.join(root, pkg, 'src');
      const files = (await readdir(src, { recursive: true }).catch(() => [])).filter((f) =>
        f.endsWith('.ts'),
      );
      for (const file of files) {
        if (
          /process\.(on|once|addListener|prependListener|prependOnceListener)\(/.test(
            await readFile(path.join(src, file), 'utf8'),
          )
        )
          listening.push(`${pkg}/src/${file}`);
      }
    }
    assert.deepEqual(listening, ['core/src/lifecycle/signals.ts']);
  });
});

describe('the phases', () => {
  it("are the only onReady, preClose and onClose hooks in any package's source: lifecycle/phases.ts adds them", async () => {
    const root = fileURLToPath(new URL('../../', import.meta.url));
    const hooking: string[] = [];
    for (const pkg of await readdir(root)) {
      const src = path.join(root, pkg, 'src');
      const files = (await readdir(src, { recursive: true }).catch(() => [])).filter((f) =>
        f.endsWith('.ts'),
      );
      for (const file of files) {
        const text = await readFile(path.join(src, file), 'utf8');
        const found = text.match(/addHook\(\s*['"](onReady|preClose|onClose)['"]/g) ?? [];
        for (const hook of found) hooking.push(`${pkg}/src/${file}: ${hook.replace(/\s+/g, '')}`);
      }
    }
    assert.deepEqual(hooking.sort(), [
      "core/src/lifecycle/phases.ts: addHook('onClose'",
      "core/src/lifecycle/phases.ts: addHook('onReady'",
      "core/src/lifecycle/phases.ts: addHook('preClose'",
    ]);
  });

  it("ready: onPhase steps run one at a time in the order added, at Fastify's ready, after Kit's own checks; the first failure fails app.ready()", async () => {
    const events: string[] = [];
    const app = Fastify();
    addKit(app);
    onPhase(app, 'ready', 'first', async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      events.push(`first (state ${app.kit.state})`);
    });
    await app.register(async (scope) => {
      onPhase(scope, 'ready', 'from a plugin context', () => void events.push('second'));
    });
    await useKit(app);
    assert.deepEqual(events, [], 'useKit does not make the instance ready');
    await app.ready();
    assert.deepEqual(events, ['first (state ready)', 'second']);
    await app.close();

    const failing = Fastify();
    addKit(failing);
    onPhase(failing, 'ready', 'broken', () => {
      throw new Error('cannot link');
    });
    const after: string[] = [];
    onPhase(failing, 'ready', 'after it', () => void after.push('run'));
    await useKit(failing);
    await assert.rejects(async () => {
      await failing.ready();
    }, /cannot link/);
    assert.deepEqual(after, [], 'the steps after the failing one do not run');
    await failing.close();
  });

  it('flush and release through onPhase keep the order of app.kit.onShutdown; misuse throws at once', async () => {
    const events: string[] = [];
    const app = Fastify();
    const kit = addKit(app);
    onPhase(app, 'release', 'pool', () => void events.push('pool released'));
    kit.onShutdown(
      'release',
      'cache',
      () => void events.push('cache released (added last, first)'),
    );
    onPhase(app, 'flush', 'outbox', () => void events.push('outbox flushed'));
    onPhase(
      app,
      'unready',
      'jobs',
      () => void events.push(`jobs stopped (state ${app.kit.state})`),
    );
    await useKit(app);
    await app.close();
    assert.deepEqual(events, [
      'jobs stopped (state shuttingDown)',
      'outbox flushed',
      'cache released (added last, first)',
      'pool released',
    ]);
    assert.throws(() => onPhase(app, 'drain' as never, 'x', () => undefined), TypeError);
    assert.throws(() => kit.onShutdown('ready' as never, 'x', () => undefined), TypeError);
    assert.throws(() => onPhase(Fastify(), 'flush', 'x', () => undefined), {
      code: 'KIT_ERR_NOT_ADDED',
    });
  });
});

describe('the shutdown steps of one app (in process)', () => {
  it('run unready, then flush, then release (the last added first), whether app.close() or app.kit.shutdown() closes the app', async () => {
    for (const how of ['app.close()', 'app.kit.shutdown()'] as const) {
      const events: string[] = [];
      let open = true;
      // An audit sink that writes to a "database" released as the app closes: it must still be open.
      const sink: IAuditSink = {
        async writeBatchAsync(entries: readonly AuditLogEntry[]) {
          events.push(`audit wrote ${entries.length} (database ${open ? 'open' : 'closed'})`);
        },
        async writeAsync() {
          events.push(`audit wrote 1 (database ${open ? 'open' : 'closed'})`);
        },
      };
      const app = Fastify();
      const kit = addKit(app, [], (opt) => {
        opt.configureAuditTrail((a) => {
          a.asyncWrite = true;
          a.flushIntervalMs = 600_000;
        });
        opt.auditSinkFactory = () => sink;
      });
      kit.onShutdown('release', 'database', async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        open = false;
        events.push('database closed');
      });
      kit.onShutdown(
        'release',
        'cache',
        () => void events.push('cache closed (added last, closed first)'),
      );
      kit.onShutdown(
        'flush',
        'outbox',
        () => void events.push(`outbox flushed (state ${app.kit.state})`),
      );
      kit.onShutdown(
        'unready',
        'jobs',
        () => void events.push(`jobs stopped (state ${app.kit.state})`),
      );
      app.get('/work', async () => 'ok');
      await useKit(app);
      for (let i = 0; i < 3; i++) assert.equal((await app.inject('/work')).statusCode, 200);
      assert.deepEqual(events, [], 'the entries are queued');
      await (how === 'app.close()' ? app.close() : app.kit.shutdown());
      // The flush steps run together: their order among themselves is not fixed.
      assert.deepEqual(
        [events[0], new Set(events.slice(1, 3)), ...events.slice(3)],
        [
          'jobs stopped (state shuttingDown)',
          new Set(['outbox flushed (state shuttingDown)', 'audit wrote 3 (database open)']),
          'cache closed (added last, closed first)',
          'database closed',
        ],
        how,
      );
    }
  });

  it('a failing step is logged and the others still run; close() then rejects with its error', async () => {
    const lines: string[] = [];
    const app = Fastify({
      logger: { level: 'error', stream: { write: (l: string) => void lines.push(l) } },
    });
    const kit = addKit(app);
    const ran: string[] = [];
    kit.onShutdown('flush', 'broken', () => {
      throw new Error('flush failed');
    });
    kit.onShutdown('release', 'pool', () => void ran.push('pool'));
    await useKit(app);
    await assert.rejects(app.close(), /flush failed/);
    assert.deepEqual(ran, ['pool']);
    assert.match(lines.join(''), /shutdown step 'broken' failed/);
    assert.throws(() => kit.onShutdown('later' as never, 'x', () => undefined), TypeError);
  });

  it("two apps in one process: closing one leaves the other's signal listener, closing both removes it", async () => {
    const before = process.listenerCount('SIGTERM');
    const a = Fastify();
    const b = Fastify();
    addKit(a, [], (opt) => opt.configureGracefulShutdown());
    addKit(b, [], (opt) => opt.configureGracefulShutdown());
    await useKit(a);
    await useKit(b);
    assert.equal(
      process.listenerCount('SIGTERM'),
      before + 1,
      'one listener for the process, whatever the number of apps',
    );
    await a.close();
    assert.equal(process.listenerCount('SIGTERM'), before + 1, "b's handling is still there");
    await b.close();
    assert.equal(process.listenerCount('SIGTERM'), before);
  });
});

interface Host {
  readonly a: string;
  readonly b: string;
  readonly dir: string;
  readonly exited: Promise<Exit>;
  readonly kill: (signal: NodeJS.Signals) => void;
  readonly stdout: () => string;
  close(): Promise<void>;
}

/** The fixture's ready line names both apps' ports: `READY <a> <b>`. */
function readyLine(line: string): { port: number; b: number } | undefined {
  const m = /READY (\d+) (\d+)/.exec(line);
  return m ? { port: Number(m[1]), b: Number(m[2]) } : undefined;
}

async function startHost(
  mode: 'both-graceful' | 'graceful-and-audit' | 'one-closes',
): Promise<Host> {
  const dir = await mkdtemp(path.join(tmpdir(), 'kit-two-apps-'));
  try {
    const host = await startProcess(hostFile, {}, { args: [dir, mode], ready: readyLine });
    return {
      a: host.base,
      b: `http://127.0.0.1:${host.ready.b}`,
      dir,
      exited: host.exited,
      kill: (s) => host.child.kill(s),
      stdout: host.stdout,
      close: async () => {
        await stopProcess(host, 'SIGKILL');
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

async function work(base: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await fetch(`${base}/work`);
    assert.equal(res.status, 200);
    ids.push(res.headers.get('x-correlation-id') as string);
    await res.arrayBuffer();
  }
  return ids;
}

async function written(host: Host, app: 'a' | 'b'): Promise<string[]> {
  const text = await readFile(path.join(host.dir, `${app}.jsonl`), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => (JSON.parse(l) as { correlationId: string }).correlationId);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** True once app `app` logged that its server closed. */
function closedLine(host: Host, app: 'a' | 'b'): boolean {
  return host
    .stdout()
    .split('\n')
    .some((l) => l.includes(`"app":"${app}"`) && l.includes('Kit: server closed'));
}

describe('two Kit apps in one process (real child process, real signals)', () => {
  it('both shut down gracefully on one SIGTERM: the shorter delay does not cut the longer one short, every entry of both is written, exit 0', async (t) => {
    const host = await startHost('both-graceful');
    try {
      const ids = { a: await work(host.a, 12), b: await work(host.b, 9) };
      const signalled = performance.now();
      host.kill('SIGTERM');
      // a's delay (300 ms) and drain are over and a has closed; b's delay (2500 ms) is not.
      await until('a closed', () => closedLine(host, 'a'), { timeoutMs: 10_000, intervalMs: 50 });
      assert.ok(performance.now() - signalled < 2500, "a closed within b's delay");
      assert.equal((await fetch(`${host.b}/healthz`)).status, 503, 'b is shutting down');
      const during = await fetch(`${host.b}/work`);
      assert.equal(during.status, 200, 'b still serves in its delay');
      ids.b.push(during.headers.get('x-correlation-id') as string);
      const exit = await host.exited;
      assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null });
      assert.ok(
        exit.at - signalled >= 2500,
        `the process waited for b's delay (${Math.round(exit.at - signalled)} ms)`,
      );
      assert.deepEqual((await written(host, 'a')).sort(), ids.a.sort());
      assert.deepEqual((await written(host, 'b')).sort(), ids.b.sort());
      t.diagnostic(`SIGTERM -> exit: ${Math.round(exit.at - signalled)} ms`);
    } finally {
      await host.close();
    }
  });

  it("one app shuts down gracefully, the other only audits: the other's queue is written before the process exits 0", async () => {
    const host = await startHost('graceful-and-audit');
    try {
      const ids = { a: await work(host.a, 5), b: await work(host.b, 17) };
      host.kill('SIGTERM');
      const exit = await host.exited;
      assert.deepEqual(
        { code: exit.code, signal: exit.signal },
        { code: 0, signal: null },
        "a's graceful shutdown ends the process",
      );
      assert.deepEqual((await written(host, 'a')).sort(), ids.a.sort());
      assert.deepEqual(
        (await written(host, 'b')).sort(),
        ids.b.sort(),
        "b's queued entries were written, not lost",
      );
      assert.match(
        host.stdout(),
        /"app":"b".*ends the process once another Kit app's graceful shutdown is done/,
      );
    } finally {
      await host.close();
    }
  });

  it("one app closed in-process leaves the other's signal handling: SIGTERM still drains it and exits 0", async () => {
    const host = await startHost('one-closes');
    try {
      const ids = { a: await work(host.a, 4), b: await work(host.b, 6) };
      assert.equal((await fetch(`${host.a}/close`, { method: 'POST' })).status, 200);
      ids.a.push('close'); // the POST /close itself is audited too
      await until(
        "a's entries written as it closed",
        async () => (await written(host, 'a')).length === ids.a.length,
        { timeoutMs: 10_000, intervalMs: 50 },
      );
      assert.equal(
        (await written(host, 'a')).filter((id) => !ids.a.includes(id)).length,
        1,
        'the one unknown id is the POST /close',
      );
      const signalled = performance.now();
      host.kill('SIGTERM');
      await sleep(300);
      assert.equal((await fetch(`${host.b}/healthz`)).status, 503, 'b is shutting down');
      const exit = await host.exited;
      assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null });
      assert.ok(exit.at - signalled >= 2500, "b's delay was honoured");
      assert.deepEqual((await written(host, 'b')).sort(), ids.b.sort());
    } finally {
      await host.close();
    }
  });
});
