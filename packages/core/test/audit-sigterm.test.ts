// @test-lines: every - the audit trail: async context, its destination streams and shutdown on this line
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import type { AuditLogEntry, AuditStats } from '@kit/core';
import { startHostProcess } from './audit-helpers.js';

const host = fileURLToPath(new URL('./fixtures/audit/sigterm-host.ts', import.meta.url));

/** The entries in the file: JSON lines of the file sink, or the audit lines pino wrote (Default format). */
async function lines(file: string): Promise<AuditLogEntry[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.correlationId !== undefined || l.CorrelationId !== undefined)
    .map((l) =>
      l.CorrelationId === undefined
        ? (l as unknown as AuditLogEntry)
        : ({
            correlationId: l.CorrelationId,
            path: l.Path,
            query: (l.Query as string).slice(1) || null,
          } as AuditLogEntry),
    );
}

describe('SIGTERM in a real child process', () => {
  const cases = [
    { sink: 'file', handler: 'kit' },
    { sink: 'log', handler: 'kit' },
    { sink: 'file', handler: 'own' },
  ] as const;
  for (const { sink, handler } of cases) {
    const what =
      sink === 'file'
        ? 'a file sink'
        : "the logging sink into pino's asynchronous file destination";
    const by =
      handler === 'kit' ? "Kit's graceful shutdown" : "the host's own handler calling app.close()";
    it(`every entry of every completed request is written (${what}; ${by}), in-flight requests included`, async (t) => {
      const h = await startHostProcess(host, [sink, handler]);
      try {
        const { base, file } = h;

        // 437 quick requests (8 batches of 50 go out; 37 stay queued behind a 10-minute interval) ...
        const completed: string[] = [];
        const request = async (url: string): Promise<void> => {
          const res = await fetch(url).catch(() => undefined);
          if (res?.status === 200) completed.push(res.headers.get('x-correlation-id') as string);
          await res?.arrayBuffer();
        };
        for (let i = 0; i < 437; i += 25)
          await Promise.all(
            Array.from({ length: Math.min(25, 437 - i) }, () => request(`${base}/work`)),
          );
        const stats = (await (await fetch(`${base}/stats`)).json()) as AuditStats;
        completed.push('stats'); // /stats is audited like any route; its id is checked by count only
        const inFileBeforeSignal = (await lines(file)).length;

        // ... then 20 slow ones still in flight when the signal arrives.
        const slow = Promise.all(Array.from({ length: 20 }, () => request(`${base}/work?ms=300`)));
        await sleep(100);
        h.child.kill('SIGTERM');
        await slow;
        const { code } = await h.exited;

        const entries = await lines(file);
        const finalStats = JSON.parse(
          /STATS (.*)/.exec(h.stdout())?.[1] ?? 'null',
        ) as AuditStats | null;
        assert.equal(code, 0, 'the host exited 0');
        // The file sink's entries wait in Kit's queue; the logging sink's as held lines (asyncWrite): both are written by the shutdown.
        assert.ok(
          inFileBeforeSignal < completed.length - 20,
          `entries were still held before the signal (${inFileBeforeSignal} in the file)`,
        );
        assert.ok(stats.queueDepth > 0, `entries held at /stats (queue ${stats.queueDepth})`);
        assert.equal(entries.length, completed.length, 'one entry per completed request');
        const ids = new Set(entries.map((e) => e.correlationId));
        for (const id of completed.filter((c) => c !== 'stats'))
          assert.ok(ids.has(id), `entry for ${id}`);
        assert.equal(
          entries.filter((e) => e.path === '/work' && e.query === 'ms=300').length,
          20,
          'the in-flight requests too',
        );
        assert.deepEqual(finalStats, {
          enqueued: completed.length,
          written: completed.length,
          dropped: 0,
          failed: 0,
          queueDepth: 0,
        });
        // The signal had a handler (Kit's graceful shutdown or the host's): the audit trail's own listener stayed out.
        assert.doesNotMatch(await readFile(file, 'utf8'), /no handler for it/);
        t.diagnostic(
          `SIGTERM (${sink} sink, ${handler} handler): ${completed.length} requests completed (20 in flight at the signal); ${inFileBeforeSignal} entries in the file before ` +
            `the signal (queue ${stats.queueDepth} at /stats), ${entries.length} after exit (code ${code}); counters ${JSON.stringify(finalStats)}`,
        );
      } finally {
        await h.close();
      }
    });
  }
});
