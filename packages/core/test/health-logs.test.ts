// @test-lines: every - health probes: sockets, signals and shutdown on this line
// No credential in any line Kit logs: checks that throw or describe connection strings and
// credentialed URLs, change status and recover, and a start-up that fails with one in its error.
// The assertion runs over the whole log output of the test (every line of both apps, Fastify's
// own included), not over one line; the masked forms must be there, so the lines were written.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import Fastify from 'fastify';
import { addKit, HealthCheckDetailLevel, HealthCheckResult, useKit } from '@kit/core';

const SECRETS = [
  's3cr3t',
  'hunter2',
  'Pw0rd-xyz',
  'r3d1s-pass',
  'cfg-Secr3t',
  'm0ng0-pw',
  'tok-123abc',
];

function capture(): { stream: Writable; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return { stream, text: () => chunks.join('') };
}

await test('every line Kit logs is scrubbed of credentials: check errors, descriptions, causes, start-up failures', async () => {
  const log = capture();
  let failing = true;
  const app = Fastify({ logger: { level: 'trace', stream: log.stream } });
  addKit(app, [], (opt) => {
    opt.openApiPath = false;
    opt.healthCheckDetailLevel = HealthCheckDetailLevel.StatusOnly;
    opt.healthChecksConfigure = (hc) =>
      hc
        .addCheck('db', () => {
          if (!failing) return HealthCheckResult.healthy();
          throw new Error('connect ECONNREFUSED postgres://orders:s3cr3t@db:5432/orders', {
            cause: new Error('auth failed for Password=hunter2'),
          });
        })
        .addCheck('search', () =>
          failing
            ? HealthCheckResult.unhealthy(
                'down: https://admin:Pw0rd-xyz@search.internal/_cluster/health',
              )
            : HealthCheckResult.healthy(
                'back via https://admin:Pw0rd-xyz@search.internal/?token=tok-123abc',
              ),
        )
        .addCheck('legacy', () =>
          failing
            ? HealthCheckResult.degraded(
                'slow: Server=legacy;User ID=sa;Password=hunter2',
                Object.assign(new Error('login failed'), {
                  code: 'ELOGIN',
                  config: { password: 'cfg-Secr3t' },
                }),
              )
            : HealthCheckResult.healthy(),
        )
        .addCheck('cache', () => {
          if (failing) throw 'redis://:r3d1s-pass@cache:6379 refused' as unknown as Error;
          return HealthCheckResult.healthy();
        });
  });
  await useKit(app);
  assert.equal((await app.inject('/healthz')).statusCode, 503);
  failing = false;
  assert.equal((await app.inject('/healthz')).statusCode, 200);
  await app.close();

  const broken = Fastify({ logger: { level: 'trace', stream: log.stream } });
  addKit(broken, [], (opt) =>
    opt.configureWarmup(async () => {
      throw new Error('warm-up: mongodb://app:m0ng0-pw@mongo/app unreachable');
    }),
  );
  await assert.rejects(useKit(broken), /warm-up/);
  await broken.close();

  const output = log.text();
  for (const secret of SECRETS)
    assert.ok(
      !output.includes(secret),
      `"${secret}" appears in the log:\n${output
        .split('\n')
        .filter((l) => l.includes(secret))
        .join('\n')}`,
    );
  type Line = {
    msg: string;
    check?: string;
    err?: { message?: string; stack?: string; code?: string; config?: unknown };
  };
  const lines = output
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line);
  assert.equal(
    lines.filter((l) => l.check !== undefined).length,
    8,
    'four checks turned bad, four recovered',
  );
  for (const masked of [
    'postgres://***@db:5432/orders',
    'https://***@search.internal/_cluster/health',
    'https://***@search.internal/?token=***',
    'Password=***',
    'redis://***@cache:6379',
    'mongodb://***@mongo/app',
  ]) {
    assert.ok(output.includes(masked), `the masked form ${masked} was logged`);
  }
  const db = lines.find((l) => l.check === 'db')?.err;
  assert.equal(
    db?.message,
    'connect ECONNREFUSED postgres://***@db:5432/orders: auth failed for Password=***',
    'the cause chain is logged, masked',
  );
  assert.match(
    db?.stack ?? '',
    /^Error: connect ECONNREFUSED postgres:\/\/\*\*\*@db:5432\/orders\n/,
  );
  const legacy = lines.find((l) => l.check === 'legacy')?.err;
  assert.equal(legacy?.code, 'ELOGIN', 'primitive properties such as code are kept');
  assert.equal(legacy?.config, undefined, 'object properties, where credentials hide, are not');
  assert.ok(lines.some((l) => l.msg === 'Kit start-up failed; the readiness gate stays closed'));
});

await test('an error whose prototype has brand-checked getters (DOMException: TimeoutError) is masked and logged, not thrown', async () => {
  const log = capture();
  const app = Fastify({ logger: { level: 'trace', stream: log.stream } });
  addKit(app, [], (opt) => {
    opt.openApiPath = false;
    opt.healthChecksConfigure = (hc) =>
      hc.addCheck('upstream', () => {
        throw new DOMException(
          'request to https://svc:s3cr3t@upstream.internal timed out',
          'TimeoutError',
        );
      });
  });
  await useKit(app);
  try {
    const res = await app.inject('/healthz');
    assert.equal(res.statusCode, 503);
    const line = log
      .text()
      .split('\n')
      .filter(Boolean)
      .map(
        (l) =>
          JSON.parse(l) as {
            msg?: string;
            err?: { type?: string; message?: string; code?: number };
          },
      )
      .find((l) => l.err?.message?.includes('upstream.internal'));
    assert.ok(line, 'the status change was logged with the error');
    assert.equal(line.err?.type, 'DOMException');
    assert.equal(line.err?.code, 23, "DOMException's code, read from the original");
    assert.ok(!log.text().includes('s3cr3t'), 'masked');
  } finally {
    await app.close();
  }
});
