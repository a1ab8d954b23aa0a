// @test-lines: every - the audit trail: async context, its destination streams and shutdown on this line
// A sink that hangs at shutdown, so the operator reading the shutdown log blames the sink and not
// the traffic: graceful shutdown must say that the audit flush timed out (not that requests did not drain), count the abandoned entries as failed, and
// not take longer than its drain timeout because of the sink.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, useKit, type IAuditSink } from '@kit/core';
import { LogCapture, portOf } from './audit-helpers.js';
import { until } from '@kit/test-support/until';

/** Never settles, ignores its AbortSignal. */
const hung: IAuditSink = {
  writeAsync: () => new Promise<void>(() => {}),
  writeBatchAsync: () => new Promise<void>(() => {}),
};

const DRAIN_MS = 300;

async function hungApp(): Promise<{ app: FastifyInstance; logs: LogCapture }> {
  const logs = new LogCapture();
  const app = Fastify({ logger: { level: 'info', stream: logs } });
  addKit(app, [], (opt) => {
    opt.configureAuditTrail((a) => {
      a.asyncWrite = true;
      a.batchSize = 100;
      a.flushIntervalMs = 600_000;
      a.writeTimeoutMs = 600_000; // the sink's own timeout would come far too late
    });
    opt.auditSinkFactory = () => hung;
    opt.configureGracefulShutdown((g) => {
      g.shutdownDelayMs = 0;
      g.drainTimeoutMs = DRAIN_MS;
    });
  });
  app.get('/hello', async () => ({ ok: true }));
  app.get('/slow', async () => {
    slowArrived += 1;
    return new Promise((resolve) => setTimeout(() => resolve({ late: true }), 5000));
  });
  await useKit(app);
  return { app, logs };
}

/** How many `/slow` requests reached their handler: the drain test waits for one, not for a fixed time. */
let slowArrived = 0;

describe('graceful shutdown with an audit sink that never answers', () => {
  it('requests drained, flush hung: KIT_ERR_AUDIT_FLUSH_TIMEOUT, every entry counted failed, within the drain timeout', async () => {
    const { app } = await hungApp();
    for (let i = 0; i < 150; i++) assert.equal((await app.inject('/hello')).statusCode, 200);
    await until(
      'one batch of 100 in the hung sink, 50 queued',
      () => app.kit.audit.stats().queueDepth === 50,
      2000,
    );
    const started = performance.now();
    await assert.rejects(app.kit.shutdown(), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_AUDIT_FLUSH_TIMEOUT');
      assert.match(
        err.message,
        /audit trail's flush on shutdown did not finish within gracefulShutdown\.drainTimeoutMs \(300 ms\)/,
      );
      assert.match(err.message, /150 entries were abandoned and counted as failed/);
      assert.doesNotMatch(err.message, /In-flight requests/);
      return true;
    });
    const took = performance.now() - started;
    assert.deepEqual(app.kit.audit.stats(), {
      enqueued: 150,
      written: 0,
      dropped: 0,
      failed: 150,
      queueDepth: 0,
    });
    assert.ok(
      took < DRAIN_MS + 1000,
      `bounded by the drain timeout (+ close's grace): ${Math.round(took)} ms`,
    );
  });

  it('requests did not drain and then the flush hung: the drain error says both, and the entries still count failed', async () => {
    const { app } = await hungApp();
    await app.listen({ port: 0, host: '127.0.0.1' });
    for (let i = 0; i < 10; i++) await app.inject('/hello');
    const arrivedBefore = slowArrived;
    const inFlight = fetch(`http://127.0.0.1:${portOf(app)}/slow`).catch(() => 'cut');
    // In flight means in its handler: a fixed pause lost the race on a loaded machine, and the
    // drain then found nothing to wait for.
    await until('the slow request in its handler', () => slowArrived > arrivedBefore, 10_000);
    await assert.rejects(app.kit.shutdown(), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_DRAIN_TIMEOUT');
      assert.match(err.message, /In-flight requests did not finish/);
      assert.match(
        err.message,
        /audit trail's flush on shutdown did not finish .* 11 entries were abandoned/,
      );
      return true;
    });
    assert.equal(await inFlight, 'cut');
    assert.deepEqual(
      app.kit.audit.stats(),
      { enqueued: 11, written: 0, dropped: 0, failed: 11, queueDepth: 0 },
      'the 10 requests and the cut one',
    );
  });
});
