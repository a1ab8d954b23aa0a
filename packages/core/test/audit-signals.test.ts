// @test-lines: every - the audit trail: async context, its destination streams and shutdown on this line
// SIGTERM and SIGINT in a real child process whose host did not configure graceful shutdown:
// such a host keeps Node's default signal behaviour, yet Kit must not lose what it already
// audited. The audit entries of every completed request are written, the process then ends as
// Node ends it without a handler, and a host with signal handlers of its own sees no change at all.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import type { AuditStats } from '@kit/core';
import { printed } from '@kit/test-support/processes';
import { until } from '@kit/test-support/until';
import { startHostProcess, type Exit, type HostProcess } from './audit-helpers.js';

const hostFile = fileURLToPath(new URL('./fixtures/audit/signal-host.ts', import.meta.url));

function startHost(args: string[], env: Record<string, string> = {}): Promise<HostProcess> {
  return startHostProcess(hostFile, args, env);
}

/** How Node ends a process that has no listener for `signal`: the reference Kit must match. */
async function nodeDefault(signal: NodeJS.Signals): Promise<Exit> {
  const child = spawn(
    process.execPath,
    ['-e', 'process.stdout.write("up\\n"); setInterval(() => {}, 1e6)'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise((resolve) => child.stdout.once('data', resolve));
  const exited = new Promise<Exit>((resolve) =>
    child.once('exit', (code, sig) => resolve({ code, signal: sig })),
  );
  child.kill(signal);
  return exited;
}

/** The correlation ids in the audit file: JSON lines of the file sink, or the audit lines pino wrote. */
async function loggedIds(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { correlationId?: string; CorrelationId?: string })
    .map((l) => l.correlationId ?? l.CorrelationId)
    .filter((id): id is string => id !== undefined);
}

async function requests(base: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 10) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(10, n - i) }, () => fetch(`${base}/work`)),
    );
    for (const res of batch) {
      assert.equal(res.status, 200);
      ids.push(res.headers.get('x-correlation-id') as string);
      await res.arrayBuffer();
    }
  }
  return ids;
}

async function stats(base: string): Promise<AuditStats> {
  return (await (await fetch(`${base}/stats`)).json()) as AuditStats;
}

/** The counters once `written` reached `written` (asked every 50 ms, for at most 20 s). */
async function settledStats(base: string, written: number): Promise<AuditStats> {
  const { value } = await until(
    `${written} entries written`,
    async () => {
      const s = await stats(base);
      return s.written >= written && s;
    },
    { timeoutMs: 20_000, intervalMs: 50 },
  );
  return value;
}

describe('a signal nobody handles, without configureGracefulShutdown (real child process)', () => {
  const cases = [
    { sink: 'log', mode: 'async', signal: 'SIGTERM' },
    { sink: 'log', mode: 'sync', signal: 'SIGTERM' },
    { sink: 'file', mode: 'async', signal: 'SIGTERM' },
    { sink: 'file', mode: 'sync', signal: 'SIGTERM' },
    { sink: 'log', mode: 'async', signal: 'SIGINT' },
  ] as const;
  for (const { sink, mode, signal } of cases) {
    it(`${sink} sink, ${mode} writing: N requests, ${signal}, N entries; the process ends as Node's default would`, async (t) => {
      const host = await startHost([sink, mode, 'none']);
      try {
        const N = 73; // 50 go out as a batch in async mode, 23 stay queued behind a 10-minute interval
        const ids = await requests(host.base, N);
        const before = await stats(host.base);
        ids.push('stats');
        const inFileBefore = (await loggedIds(host.file)).length;
        host.child.kill(signal);
        const exit = await host.exited;
        assert.deepEqual(
          exit,
          await nodeDefault(signal),
          `exits as an unhandled ${signal} does: killed by it (128 + signal number in a shell)`,
        );
        const logged = await loggedIds(host.file);
        assert.equal(
          logged.length,
          N + 1,
          `one entry per completed request (${N} + the /stats request)`,
        );
        const set = new Set(logged);
        for (const id of ids.filter((i) => i !== 'stats'))
          assert.ok(set.has(id), `entry for ${id}`);
        // The logging sink is written each turn in both modes (docs/audit.md): only the file sink queues.
        if (mode === 'async' && sink === 'file')
          assert.ok(
            before.queueDepth > 0 && inFileBefore < N,
            `entries were still queued at the signal (${before.queueDepth})`,
          );
        if (sink === 'log')
          assert.match(
            await readFile(host.file, 'utf8'),
            new RegExp(`Kit audit trail: ${signal} and no handler for it`),
          );
        t.diagnostic(
          `${sink}/${mode}/${signal}: ${N + 1} requests, ${inFileBefore} entries in the file before the signal (queue ${before.queueDepth}), ${logged.length} after; exit ${JSON.stringify(exit)}`,
        );
      } finally {
        await host.close();
      }
    });
  }

  it('a sink that never answers cannot hold the process: it still dies of the signal, after writeTimeoutMs', async () => {
    const host = await startHost(['hung', 'async', 'none'], { KIT_WRITE_TIMEOUT_MS: '300' });
    try {
      await requests(host.base, 20);
      const start = Date.now();
      host.child.kill('SIGTERM');
      assert.deepEqual(await host.exited, { code: null, signal: 'SIGTERM' });
      assert.ok(Date.now() - start < 20_000, 'bounded (writeTimeoutMs is 300 ms)');
    } finally {
      await host.close();
    }
  });

  it('a second signal during the flush ends the process at once', async () => {
    const host = await startHost(['hung', 'async', 'none'], { KIT_WRITE_TIMEOUT_MS: '600000' });
    try {
      await requests(host.base, 20);
      host.child.kill('SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(host.child.exitCode, null, 'still flushing (writeTimeoutMs is 10 minutes)');
      host.child.kill('SIGTERM');
      assert.deepEqual(await host.exited, { code: null, signal: 'SIGTERM' });
    } finally {
      await host.close();
    }
  });
});

describe("a host with its own signal handlers: Kit's listener changes nothing (real child process)", () => {
  for (const when of ['own-before', 'own-after'] as const) {
    it(`handlers added ${when === 'own-before' ? 'before addKit' : 'after listen()'}: the process keeps running, nothing is flushed, the host's exit code stands`, async () => {
      const host = await startHost(['file', 'async', when]);
      try {
        await requests(host.base, 60);
        // The first 50 leave as one batch; wait until its append has settled, so that what the
        // signals do (nothing) is not confused with a write still in flight (in a fresh-clone CI run
        // on a loaded machine, written was still 0 three round trips and two signals later).
        const before = await settledStats(host.base, 50);
        assert.equal(before.written, 50, '50 written as a batch');
        assert.equal(
          before.queueDepth,
          before.enqueued - 50,
          'everything else queued: 10 requests and the /stats calls before this one',
        );
        for (const signal of ['SIGTERM', 'SIGINT'] as const) {
          host.child.kill(signal);
          await printed(host, `HOST ${signal}`, 20_000);
        }
        // Still serving, and the queue was left alone: the first /stats entry joined it, nothing left it.
        const after = await stats(host.base);
        assert.equal(after.queueDepth, before.queueDepth + 1);
        assert.equal(after.written, 50);
        assert.equal((await loggedIds(host.file)).length, 50);
        assert.doesNotMatch(host.stdout(), /Kit audit trail/);
        await fetch(`${host.base}/exit?code=7`).catch(() => undefined);
        assert.deepEqual(await host.exited, { code: 7, signal: null });
      } finally {
        await host.close();
      }
    });
  }
});
