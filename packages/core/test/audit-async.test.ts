// @test-lines: every - the audit trail: async context, its destination streams and shutdown on this line
import assert from 'node:assert/strict';
import { tracingChannel } from 'node:diagnostics_channel';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import {
  AUDIT_QUEUE_CAPACITY,
  type AuditLogEntry,
  type AuditTrailOptions,
  type IAuditSink,
} from '@kit/core';
import { auditApp, LEVEL, RecordingSink, settle, type AuditApp } from './audit-helpers.js';
import { spawnFixture } from '@kit/test-support/processes';
import { until } from '@kit/test-support/until';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

function heapMb(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

async function asyncApp(
  sink: IAuditSink,
  audit?: (a: AuditTrailOptions) => void,
): Promise<AuditApp> {
  return auditApp({
    audit: (a) => {
      a.asyncWrite = true;
      audit?.(a);
    },
    kit: (opt) => {
      opt.auditSinkFactory = () => sink;
    },
  });
}

/** `n` concurrent inject() requests; resolves with their status codes. */
async function burst(h: AuditApp, n: number, url = '/hello'): Promise<number[]> {
  return Promise.all(
    Array.from({ length: n }, (_, i) =>
      h.app.inject({ url: `${url}?i=${i}` }).then((r) => r.statusCode),
    ),
  );
}

function histogram(sizes: readonly number[]): string {
  const counts = new Map<number, number>();
  for (const s of sizes) counts.set(s, (counts.get(s) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[0] - a[0])
    .map(([size, times]) => `${times}x${size}`)
    .join(' ');
}

describe('asynchronous mode', () => {
  it('batches never exceed batchSize, and every entry is written once, in order', async (t) => {
    const sink = new RecordingSink();
    const h = await asyncApp(sink, (a) => {
      a.batchSize = 7;
      a.flushIntervalMs = 50;
    });
    try {
      for (let wave = 0; wave < 5; wave++) assert.ok((await burst(h, 60)).every((s) => s === 200));
      await h.app.kit.audit.flush();
      assert.equal(sink.entries.length, 300);
      assert.ok(Math.max(...sink.batches) <= 7, `batches: ${histogram(sink.batches)}`);
      assert.equal(
        sink.batches.reduce((a, b) => a + b, 0),
        300,
      );
      assert.equal(new Set(sink.entries.map((e) => e.correlationId)).size, 300, 'no entry twice');
      assert.deepEqual(h.app.kit.audit.stats(), {
        enqueued: 300,
        written: 300,
        dropped: 0,
        failed: 0,
        queueDepth: 0,
      });
      t.diagnostic(
        `300 entries, batchSize 7: ${sink.batches.length} batches (${histogram(sink.batches)})`,
      );
    } finally {
      await h.app.close();
    }
  });

  it('one batch in flight at a time', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const written: number[] = [];
    const slow: IAuditSink = {
      writeAsync: () => Promise.resolve(),
      writeBatchAsync: async (entries) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await sleep(15);
        written.push(entries.length);
        inFlight--;
      },
    };
    const h = await asyncApp(slow, (a) => {
      a.batchSize = 10;
      a.flushIntervalMs = 20;
    });
    try {
      for (let i = 0; i < 4; i++) await burst(h, 50);
      await h.app.kit.audit.flush();
      assert.equal(maxInFlight, 1);
      assert.equal(
        written.reduce((a, b) => a + b, 0),
        200,
      );
    } finally {
      await h.app.close();
    }
  });

  it('a partial batch is flushed flushIntervalMs after its first entry, and again for the next one', async (t) => {
    const sink = new RecordingSink();
    const h = await asyncApp(sink, (a) => {
      a.batchSize = 100;
      a.flushIntervalMs = 300;
    });
    try {
      const start = performance.now();
      await burst(h, 5);
      await sleep(150);
      assert.equal(sink.entries.length, 0, 'nothing before the interval');
      assert.equal(h.app.kit.audit.stats().queueDepth, 5);
      await until('the partial batch', () => sink.entries.length === 5, 2000);
      const first = performance.now() - start;
      assert.ok(first >= 290 && first < 1000, `first partial batch after ${first.toFixed(0)} ms`);
      assert.deepEqual(sink.batches, [5]);

      const again = performance.now();
      await burst(h, 3);
      await until('the second partial batch', () => sink.entries.length === 8, 2000);
      const second = performance.now() - again;
      assert.ok(
        second >= 290 && second < 1000,
        `second partial batch after ${second.toFixed(0)} ms`,
      );
      assert.deepEqual(sink.batches, [5, 3]);
      t.diagnostic(
        `flushIntervalMs 300: partial batches of 5 and 3 written after ${first.toFixed(0)} ms and ${second.toFixed(0)} ms`,
      );
    } finally {
      await h.app.close();
    }
  });

  it('a full batch is written at once, without waiting for the interval', async () => {
    const sink = new RecordingSink();
    const h = await asyncApp(sink, (a) => {
      a.batchSize = 20;
      a.flushIntervalMs = 60_000;
    });
    try {
      await burst(h, 20);
      await until('the full batch', () => sink.entries.length === 20, 1000);
      assert.deepEqual(sink.batches, [20]);
    } finally {
      await h.app.close();
    }
  });

  it('a sink that never resolves: 10,000 concurrent requests all succeed, dropped accounts for every entry not queued, memory stays bounded', async (t) => {
    const calls: number[] = [];
    const hung: IAuditSink = {
      writeAsync: () => new Promise<void>(() => {}),
      writeBatchAsync: (entries) => {
        calls.push(entries.length);
        return new Promise<void>(() => {});
      },
    };
    // For scale: an app that has served 10,000 concurrent injects keeps tens of MB (Fastify's and
    // light-my-request's structures, grown to the peak and freed with the app), audit trail or not.
    const baseline = await auditApp({ fastify: { logger: false }, off: true });
    const baselineBefore = heapMb();
    await burst(baseline, 10_000);
    const baselineAfter = heapMb();
    await baseline.app.close();

    // No log capture here: it would keep every line. ensureFlushOnShutdown off, so close() drops the
    // queue at once and the heap after it shows what the full queue held.
    const h = await auditApp({
      fastify: { logger: false },
      audit: (a) => {
        a.asyncWrite = true;
        a.writeTimeoutMs = 60_000;
        a.ensureFlushOnShutdown = false;
      },
      kit: (opt) => {
        opt.auditSinkFactory = () => hung;
      },
    });
    await burst(h, 200); // warm-up: JIT, and the first batch goes out (and hangs)
    await settle();
    assert.equal(calls.length, 1);
    const before = heapMb();
    const s0 = h.app.kit.audit.stats();

    const waves: Array<{
      ms: number;
      heap: number;
      stats: ReturnType<typeof h.app.kit.audit.stats>;
    }> = [];
    for (let wave = 0; wave < 3; wave++) {
      const start = performance.now();
      const statuses = await burst(h, 10_000);
      const ms = performance.now() - start;
      assert.equal(
        statuses.filter((s) => s === 200).length,
        10_000,
        `every request of wave ${wave + 1} succeeded`,
      );
      await settle();
      waves.push({ ms, heap: heapMb(), stats: h.app.kit.audit.stats() });
    }
    const [w1, , w3] = waves as [(typeof waves)[0], (typeof waves)[0], (typeof waves)[0]];
    assert.equal(
      w3.stats.enqueued + w3.stats.dropped,
      30_200,
      'every request is either queued or dropped',
    );
    assert.equal(w1.stats.enqueued + w1.stats.dropped - (s0.enqueued + s0.dropped), 10_000);
    assert.equal(w1.stats.queueDepth, AUDIT_QUEUE_CAPACITY, 'the queue is full after wave 1');
    assert.equal(w3.stats.queueDepth, AUDIT_QUEUE_CAPACITY, 'and stays full');
    assert.equal(
      w3.stats.enqueued,
      AUDIT_QUEUE_CAPACITY + calls.reduce((a, b) => a + b, 0),
      'queued = in the queue + handed to the (hung) sink',
    );
    assert.equal(w3.stats.written + w3.stats.failed, 0);
    assert.equal(w3.stats.dropped - w1.stats.dropped, 20_000, 'waves 2 and 3: everything dropped');
    assert.equal(calls.length, 1, 'one batch in flight, never settled');
    assert.ok(
      w3.heap - w1.heap < 4,
      `heap grew ${(w3.heap - w1.heap).toFixed(1)} MB over 20,000 more requests`,
    );

    await h.app.close();
    const closed = heapMb();
    assert.equal(h.app.kit.audit.stats().queueDepth, 0);
    const queueMb = w3.heap - closed;
    assert.ok(queueMb < 16, `the full queue held ${queueMb.toFixed(1)} MB`);
    t.diagnostic(
      `hung sink, 3 waves of 10,000 concurrent requests (${waves.map((w) => w.ms.toFixed(0)).join(', ')} ms): all 30,000 answered 200; ` +
        `enqueued ${w3.stats.enqueued} (queue ${w3.stats.queueDepth} + ${calls[0]} in the hung batch), dropped ${w3.stats.dropped} ` +
        `(wave 1: ${w1.stats.dropped - s0.dropped}, waves 2-3: ${w3.stats.dropped - w1.stats.dropped})`,
    );
    t.diagnostic(
      `heap used, audit off: ${baselineBefore.toFixed(1)} MB -> ${baselineAfter.toFixed(1)} MB after 10,000 concurrent requests; ` +
        `hung sink: ${before.toFixed(1)} MB before, ${waves.map((w) => w.heap.toFixed(1)).join(' / ')} MB after waves 1/2/3, ` +
        `${closed.toFixed(1)} MB after close() dropped the queue (a full queue holds ~${queueMb.toFixed(1)} MB, ~${((queueMb * 2 ** 20) / AUDIT_QUEUE_CAPACITY / 1024).toFixed(2)} KB per entry)`,
    );
  });

  it('a hung call times out after writeTimeoutMs: its entries count as failed, its signal is aborted, the writer moves on', async (t) => {
    const signals: AbortSignal[] = [];
    let first = true;
    const written: AuditLogEntry[] = [];
    const flaky: IAuditSink = {
      writeAsync: () => Promise.resolve(),
      writeBatchAsync: (entries, signal) => {
        if (signal) signals.push(signal);
        if (first) {
          first = false;
          return new Promise<void>(() => {}); // ignores its signal, never settles
        }
        written.push(...entries);
        return Promise.resolve();
      },
    };
    const h = await asyncApp(flaky, (a) => {
      a.batchSize = 10;
      a.flushIntervalMs = 20;
      a.writeTimeoutMs = 200;
    });
    try {
      const start = performance.now();
      await burst(h, 10);
      await sleep(50);
      await burst(h, 30);
      await until('the batches after the hung one', () => written.length === 30, 3000);
      const elapsed = performance.now() - start;
      assert.ok(elapsed >= 190, `moved on after ${elapsed.toFixed(0)} ms`);
      assert.equal(signals[0]?.aborted, true);
      assert.equal((signals[0]?.reason as { code?: string }).code, 'KIT_ERR_AUDIT_WRITE_TIMEOUT');
      assert.deepEqual(h.app.kit.audit.stats(), {
        enqueued: 40,
        written: 30,
        dropped: 0,
        failed: 10,
        queueDepth: 0,
      });
      const report = h.logs.lines.find(
        (l) =>
          typeof l.msg === 'string' && l.msg.startsWith('Kit audit trail: the audit sink failed'),
      );
      assert.equal(
        (report?.err as { code?: string } | undefined)?.code,
        'KIT_ERR_AUDIT_WRITE_TIMEOUT',
      );
      t.diagnostic(
        `writeTimeoutMs 200: the hung batch of 10 failed, the next 30 entries written ${elapsed.toFixed(0)} ms after the start`,
      );
    } finally {
      await h.app.close();
    }
  });

  it('with two calls hung, the writer stops taking batches: the queue fills and drops; close() gives up and counts the rest failed', async () => {
    let calls = 0;
    const hung: IAuditSink = {
      writeAsync: () => Promise.resolve(),
      writeBatchAsync: () => {
        calls++;
        return new Promise<void>(() => {});
      },
    };
    const h = await asyncApp(hung, (a) => {
      a.batchSize = 10;
      a.flushIntervalMs = 10;
      a.writeTimeoutMs = 100;
    });
    await burst(h, 30);
    await sleep(400);
    assert.equal(calls, 2, 'two calls made, no third while both are unsettled');
    await burst(h, 20);
    await sleep(50);
    const start = performance.now();
    await h.app.close();
    assert.ok(performance.now() - start < 500, 'close() did not wait for the hung sink');
    const s = h.app.kit.audit.stats();
    assert.deepEqual(s, { enqueued: 50, written: 0, dropped: 0, failed: 50, queueDepth: 0 });
  });

  it('a sink that throws or rejects: requests succeed, failed counts every entry', async () => {
    const throwing: IAuditSink = {
      writeAsync: () => Promise.reject(new Error('nope')),
      writeBatchAsync: () => {
        throw new Error('batch nope');
      },
    };
    const h = await asyncApp(throwing, (a) => {
      a.batchSize = 25;
      a.flushIntervalMs = 20;
    });
    try {
      assert.ok((await burst(h, 100)).every((s) => s === 200));
      await h.app.kit.audit.flush();
      assert.deepEqual(h.app.kit.audit.stats(), {
        enqueued: 100,
        written: 0,
        dropped: 0,
        failed: 100,
        queueDepth: 0,
      });
    } finally {
      await h.app.close();
    }
  });

  it('a sink without writeBatchAsync gets writeAsync entry by entry, in order, each counted', async () => {
    const order: string[] = [];
    let n = 0;
    const single: IAuditSink = {
      writeAsync: async (entry) => {
        await sleep(1);
        if (++n % 5 === 0) throw new Error('every fifth fails');
        order.push(entry.query ?? '');
      },
    };
    const h = await asyncApp(single, (a) => {
      a.batchSize = 10;
      a.flushIntervalMs = 20;
    });
    try {
      for (let i = 0; i < 20; i++) await h.app.inject(`/hello?n=${i}`);
      await h.app.kit.audit.flush();
      assert.deepEqual(h.app.kit.audit.stats(), {
        enqueued: 20,
        written: 16,
        dropped: 0,
        failed: 4,
        queueDepth: 0,
      });
      const expected = Array.from({ length: 20 }, (_, i) => `n=${i}`).filter(
        (_, i) => (i + 1) % 5 !== 0,
      );
      assert.deepEqual(order, expected);
    } finally {
      await h.app.close();
    }
  });

  it('app.close() flushes every queued entry (ensureFlushOnShutdown, the default)', async (t) => {
    const sink = new RecordingSink();
    const h = await asyncApp(sink, (a) => {
      a.batchSize = 1000;
      a.flushIntervalMs = 60_000;
    });
    assert.equal(h.app.kit.options.auditTrail?.ensureFlushOnShutdown, true);
    const statuses = await burst(h, 2500);
    const completed = statuses.filter((s) => s === 200).length;
    await settle();
    const before = h.app.kit.audit.stats();
    assert.equal(before.written, 2000, 'two full batches went out on their own');
    assert.equal(before.queueDepth, 500);
    await h.app.close();
    assert.equal(sink.entries.length, completed);
    assert.deepEqual(h.app.kit.audit.stats(), {
      enqueued: 2500,
      written: 2500,
      dropped: 0,
      failed: 0,
      queueDepth: 0,
    });
    t.diagnostic(
      `app.close(): ${completed} requests completed, ${before.queueDepth} entries queued at close, ${sink.entries.length} entries in the sink after close (batches ${histogram(sink.batches)})`,
    );
  });

  it('ensureFlushOnShutdown = false: close() discards the queue and counts it dropped', async () => {
    const sink = new RecordingSink();
    const h = await asyncApp(sink, (a) => {
      a.flushIntervalMs = 60_000;
      a.ensureFlushOnShutdown = false;
    });
    await burst(h, 30);
    await h.app.close();
    assert.equal(sink.entries.length, 0);
    assert.deepEqual(h.app.kit.audit.stats(), {
      enqueued: 30,
      written: 0,
      dropped: 30,
      failed: 0,
      queueDepth: 0,
    });
  });

  it('flush() writes what is queued now', async () => {
    const sink = new RecordingSink();
    const h = await asyncApp(sink, (a) => {
      a.flushIntervalMs = 60_000;
    });
    try {
      await burst(h, 12);
      assert.equal(sink.entries.length, 0);
      await h.app.kit.audit.flush();
      assert.equal(sink.entries.length, 12);
      await h.app.kit.audit.flush(); // nothing queued: resolves at once
    } finally {
      await h.app.close();
    }
  });

  it('flush() resolves once the entries queued at the call are written, while new ones keep arriving', async () => {
    const sink: IAuditSink = {
      writeAsync: () => Promise.resolve(),
      writeBatchAsync: () => sleep(5),
    };
    const h = await asyncApp(sink, (a) => {
      a.batchSize = 10;
      a.flushIntervalMs = 60_000;
    });
    let stop = false;
    const traffic = (async () => {
      // inject() alone never yields to timers: let the event loop turn between bursts.
      while (!stop) {
        await burst(h, 5);
        await new Promise((r) => setImmediate(r));
      }
    })();
    try {
      await burst(h, 25);
      const queuedAtCall = h.app.kit.audit.stats().enqueued;
      const flushed = await Promise.race([
        h.app.kit.audit.flush().then(() => true),
        sleep(3000).then(() => false),
      ]);
      assert.ok(flushed, 'flush() resolved under continuous traffic');
      assert.ok(
        h.app.kit.audit.stats().written >= queuedAtCall,
        'everything queued at the call is written',
      );
    } finally {
      stop = true;
      await traffic;
      await h.app.close();
    }
  });

  it('with the logging sink, asyncWrite holds the formatted lines until batchSize entries wait, then writes them in order in one destination write', async () => {
    const h = await auditApp({
      audit: (a) => {
        a.asyncWrite = true;
        a.batchSize = 50;
        a.flushIntervalMs = 60_000;
      },
    });
    try {
      await burst(h, 30);
      await burst(h, 10, '/nowhere');
      await settle();
      assert.equal(
        h.logs.audit().length,
        0,
        'nothing reaches the destination before batchSize entries wait',
      );
      assert.deepEqual(h.app.kit.audit.stats(), {
        enqueued: 40,
        written: 0,
        dropped: 0,
        failed: 0,
        queueDepth: 40,
      });
      const writesBefore = h.logs.auditWrites;
      await burst(h, 10);
      await settle();
      const lines = h.logs.audit();
      assert.equal(lines.length, 50, 'the 50th entry releases all of them');
      assert.equal(h.logs.auditWrites - writesBefore, 1, 'in one destination write');
      assert.equal(lines.filter((l) => l.level === LEVEL.warn).length, 10);
      assert.deepEqual(
        lines.slice(30, 40).map((l) => l.Path),
        Array(10).fill('/nowhere'),
        'in the order the responses completed',
      );
      assert.match(
        lines[0]?.msg as string,
        /^HTTP GET \/hello\?i=\d+ responded 200 in [\d.]+ms \[CorrelationId: [0-9a-f-]{36}\] Headers=\{/,
      );
      assert.deepEqual(h.app.kit.audit.stats(), {
        enqueued: 50,
        written: 50,
        dropped: 0,
        failed: 0,
        queueDepth: 0,
      });
    } finally {
      await h.app.close();
    }
  });

  it('with the logging sink, asyncWrite writes held lines flushIntervalMs after the first of them, on flush(), and on close()', async () => {
    const h = await auditApp({
      audit: (a) => {
        a.asyncWrite = true;
        a.batchSize = 100;
        a.flushIntervalMs = 150;
      },
    });
    try {
      const started = Date.now();
      await burst(h, 3);
      await settle();
      const heldAt = Date.now();
      assert.equal(h.logs.audit().length, 0);
      await until('the interval to write the held lines', () => h.logs.audit().length === 3, 5000);
      assert.ok(
        Date.now() - started >= 145,
        `written ${Date.now() - started} ms after the first entry (flushIntervalMs 150)`,
      );
      // The line's time is when it was formatted (the end of the request's turn), not when it was written.
      const time = h.logs.audit()[0]?.time as number;
      assert.ok(time <= heldAt, `line time ${time - heldAt} ms after the lines were held`);

      await burst(h, 2);
      await settle();
      assert.equal(h.logs.audit().length, 3);
      await h.app.kit.audit.flush();
      assert.equal(h.logs.audit().length, 5, 'flush() writes the held lines');

      await burst(h, 4);
      await settle();
      assert.equal(h.logs.audit().length, 5);
    } finally {
      await h.app.close();
    }
    assert.equal(h.logs.audit().length, 9, 'close() writes the held lines');
    assert.deepEqual(h.app.kit.audit.stats(), {
      enqueued: 9,
      written: 9,
      dropped: 0,
      failed: 0,
      queueDepth: 0,
    });
  });

  it("with the logging sink, lines held when a subscriber to pino's asJson channel appears are written first, then pino writes each line itself, in order", async () => {
    const h = await auditApp({
      audit: (a) => {
        a.asyncWrite = true;
        a.batchSize = 50;
        a.flushIntervalMs = 60_000;
      },
    });
    const channel = tracingChannel('pino_asJson');
    const handlers = { start() {}, end() {}, asyncStart() {}, asyncEnd() {}, error() {} };
    try {
      await burst(h, 3);
      await settle();
      assert.equal(h.logs.audit().length, 0, 'three lines held');
      channel.subscribe(handlers);
      await burst(h, 2, '/nowhere');
      await settle();
      const paths = h.logs.audit().map((l) => l.Path);
      assert.deepEqual(
        paths,
        ['/hello', '/hello', '/hello', '/nowhere', '/nowhere'],
        'the held lines before the new ones, none left held',
      );
      assert.equal(h.app.kit.audit.stats().queueDepth, 0);
    } finally {
      channel.unsubscribe(handlers);
      await h.app.close();
    }
    assert.deepEqual(h.app.kit.audit.stats(), {
      enqueued: 5,
      written: 5,
      dropped: 0,
      failed: 0,
      queueDepth: 0,
    });
  });

  it('with the logging sink, a process whose event loop runs dry (its app never closed) still writes the held lines', async () => {
    for (let round = 0; round < 3; round++) {
      const host = spawnFixture(
        fileURLToPath(new URL('./fixtures/audit/drain-host.ts', import.meta.url)),
      );
      // Once stdout and stderr are closed: every line the script wrote has been read.
      const { code } = await host.closed;
      const stdout = host.stdout();
      const stderr = host.stderr();
      assert.equal(code, 0, `round ${round}: exit code (stderr: ${stderr})`);
      assert.match(
        stderr,
        /held 5\n/,
        `round ${round}: the five lines were held when the script ended`,
      );
      const paths = stdout
        .split('\n')
        .filter((l) => l.includes('"CorrelationId"'))
        .map((l) => {
          const line = JSON.parse(l) as { Path: string; Query: string };
          return line.Path + line.Query;
        });
      assert.deepEqual(
        paths,
        [0, 1, 2, 3, 4].map((i) => `/work?i=${i}`),
        `round ${round}: every held line written, in order`,
      );
    }
  });

  it('with the logging sink, a busy server loses nothing: at most a partial batch is held after a wave, every entry is written once', async (t) => {
    // Regression: the writer once logged 16 entries per event-loop turn, so a server completing
    // more requests than that per turn filled the queue and dropped most entries.
    const h = await auditApp({
      audit: (a) => {
        a.asyncWrite = true;
      },
    });
    try {
      let worst = 0;
      for (let wave = 0; wave < 12; wave++) {
        await burst(h, 700);
        await new Promise((r) => setImmediate(r));
        worst = Math.max(worst, h.app.kit.audit.stats().queueDepth);
      }
      assert.ok(
        worst < 100,
        `one turn after a wave at most a partial batch (fewer than batchSize 100) is held; saw ${worst}`,
      );
      await h.app.kit.audit.flush();
      assert.deepEqual(h.app.kit.audit.stats(), {
        enqueued: 8400,
        written: 8400,
        dropped: 0,
        failed: 0,
        queueDepth: 0,
      });
      assert.equal(h.logs.audit().length, 8400);
      t.diagnostic(`12 waves of 700 requests: queue depth one turn after a wave at most ${worst}`);
    } finally {
      await h.app.close();
    }
  });
});
