// @test-lines: once - metrics over inject
// Metrics with the real prom-client: off by default; the audit counters (read from
// app.kit.audit.stats() at scrape time) and the health check results (status, duration) in
// Prometheus text, served at /metrics or put into the host's own registry.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import {
  addKit,
  HealthCheckResult,
  useKit,
  type AuditLogEntry,
  type EndpointApp,
  type IAuditSink,
  type IKitEndpoint,
  type KitOption,
} from '@kit/core';
import { sleep } from './support/http.ts';

async function app(configure: (opt: KitOption) => void): Promise<FastifyInstance> {
  const a = Fastify();
  addKit(a, [], (opt) => {
    opt.openApiPath = false;
    configure(opt);
  });
  a.get('/work', async () => ({ ok: true }));
  await useKit(a);
  await a.ready();
  return a;
}

/** `name{labels} value` lines of a Prometheus text body, as a map. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** A sink that never answers: its entries stay in flight and the queue fills. */
class HungSink implements IAuditSink {
  writeAsync(_entry: AuditLogEntry): Promise<void> {
    return new Promise(() => {});
  }
}

describe('metrics', () => {
  it('are off by default: no /metrics route', async () => {
    const a = await app(() => {});
    assert.equal((await a.inject('/metrics')).statusCode, 404);
    await a.close();
  });

  it('the audit counters equal app.kit.audit.stats(), dropped entries included', async () => {
    const a = await app((opt) => {
      opt.configureAuditTrail((t) => {
        t.asyncWrite = true;
        t.batchSize = 10;
        t.flushIntervalMs = 10;
        t.writeTimeoutMs = 600_000;
        t.ensureFlushOnShutdown = false;
      });
      opt.auditSinkFactory = () => new HungSink();
      opt.configureMetrics();
    });
    const requests = 4200;
    for (let i = 0; i < requests; i += 200)
      await Promise.all(Array.from({ length: 200 }, () => a.inject('/work')));
    await sleep(50);
    const res = await a.inject('/metrics');
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    const stats = a.kit.audit.stats();
    const m = samples(res.body);
    assert.equal(m.get('kit_audit_entries_enqueued_total'), stats.enqueued);
    assert.equal(m.get('kit_audit_entries_written_total'), stats.written);
    assert.equal(m.get('kit_audit_entries_dropped_total'), stats.dropped);
    assert.equal(m.get('kit_audit_entries_failed_total'), stats.failed);
    assert.equal(m.get('kit_audit_queue_depth'), stats.queueDepth);
    assert.ok(
      stats.dropped > 0 && stats.queueDepth > 4000,
      `the hung sink filled the queue: ${JSON.stringify(stats)}`,
    );
    assert.ok(res.body.includes('# TYPE kit_audit_entries_dropped_total counter'));
    assert.ok(!(await a.inject('/metrics')).body.includes('path="/metrics"'));
    await a.close();
  });

  it('the scrape itself is not audited, like the probes', async () => {
    const entries: AuditLogEntry[] = [];
    const a = await app((opt) => {
      opt.configureAuditTrail();
      opt.auditSinkFactory = () => ({
        writeAsync: async (e: AuditLogEntry) => void entries.push(e),
      });
      opt.configureMetrics();
    });
    await a.inject('/metrics');
    await a.inject('/work');
    await a.kit.audit.flush();
    assert.deepEqual(
      entries.map((e) => e.path),
      ['/work'],
    );
    await a.close();
  });

  it('health checks: status per check at the last evaluation, duration histogram, no audit metrics without the audit trail', async () => {
    let cacheUp = false;
    const a = await app((opt) => {
      opt.healthChecksConfigure = (hc) =>
        hc
          .addCheck('db', () => HealthCheckResult.healthy())
          .addCheck('cache', () =>
            cacheUp ? HealthCheckResult.healthy() : HealthCheckResult.unhealthy('down'),
          )
          .addCheck('search', () => new Promise(() => {}), { timeoutMs: 60 });
      opt.configureMetrics();
    });
    const before = samples((await a.inject('/metrics')).body);
    assert.equal(
      [...before.keys()].filter((k) => k.startsWith('kit_health_check_status')).length,
      0,
      'nothing before the first evaluation',
    );
    assert.equal([...before.keys()].filter((k) => k.startsWith('kit_audit')).length, 0);
    assert.equal((await a.inject('/healthz')).statusCode, 503);
    let m = samples((await a.inject('/metrics')).body);
    assert.equal(m.get('kit_health_check_status{check="db",status="healthy"}'), 1);
    assert.equal(m.get('kit_health_check_status{check="db",status="unhealthy"}'), 0);
    assert.equal(m.get('kit_health_check_status{check="cache",status="unhealthy"}'), 1);
    assert.equal(m.get('kit_health_check_status{check="search",status="unhealthy"}'), 1);
    assert.equal(m.get('kit_health_check_duration_seconds_count{check="search"}'), 1);
    assert.ok(
      (m.get('kit_health_check_duration_seconds_sum{check="search"}') ?? 0) >= 0.05,
      'a timed-out check counts its timeout',
    );
    assert.equal(m.get('kit_health_check_duration_seconds_bucket{le="0.8",check="db"}'), 1);
    cacheUp = true;
    await a.inject('/healthz');
    m = samples((await a.inject('/metrics')).body);
    assert.equal(m.get('kit_health_check_status{check="cache",status="healthy"}'), 1);
    assert.equal(m.get('kit_health_check_status{check="cache",status="unhealthy"}'), 0);
    assert.equal(m.get('kit_health_check_duration_seconds_count{check="db"}'), 2);
    await a.close();
  });

  it("into the host's registry, with no route of Kit's; two apps sharing a registry need their own prefixes", async () => {
    const registry = new Registry();
    const a = await app((opt) => {
      opt.configureAuditTrail();
      opt.configureMetrics((m) => {
        m.registry = registry;
        m.path = false;
      });
    });
    assert.equal((await a.inject('/metrics')).statusCode, 404);
    await a.inject('/work');
    assert.equal(
      a.kit.audit.stats().enqueued,
      2,
      'the 404 on /metrics and /work: with no route of its own, Kit leaves /metrics audited',
    );
    assert.equal(samples(await registry.metrics()).get('kit_audit_entries_enqueued_total'), 2);

    const clash = Fastify();
    addKit(clash, [], (opt) => opt.configureMetrics((m) => void (m.registry = registry)));
    await assert.rejects(
      useKit(clash),
      (err: Error & { code?: string }) =>
        err.code === 'KIT_ERR_INVALID_OPTION' && /metrics\.prefix = "kit_"/.test(err.message),
    );
    const second = await app((opt) =>
      opt.configureMetrics((m) => {
        m.registry = registry;
        m.prefix = 'orders_kit_';
      }),
    );
    await second.inject('/healthz');
    assert.ok((await registry.metrics()).includes('# TYPE orders_kit_health_check_status gauge'));
    await Promise.all([a.close(), second.close()]);
  });

  it('bad metrics options fail addKit with KIT_ERR_INVALID_OPTION naming the option', () => {
    const cases: Array<[(opt: KitOption) => void, RegExp]> = [
      [(opt) => opt.configureMetrics((m) => void (m.prefix = 'kit-')), /metrics\.prefix = "kit-"/],
      [
        (opt) => opt.configureMetrics((m) => void (m.path = 'metrics')),
        /metrics\.path = "metrics"/,
      ],
      [
        (opt) => opt.configureMetrics((m) => void (m.path = '/healthz')),
        /healthCheckPath = "\/healthz and \/healthz"/,
      ],
      [
        (opt) => opt.configureMetrics((m) => void (m.registry = {} as never)),
        /metrics\.registry = \{\}/,
      ],
      [
        (opt) => opt.configureMetrics((m) => void (m.requestMetrics = 'yes' as never)),
        /metrics\.requestMetrics = "yes"/,
      ],
      [
        (opt) => opt.configureMetrics((m) => void (m.requestDurationBuckets = [1, 0.5])),
        /metrics\.requestDurationBuckets = \[1,0\.5\]/,
      ],
      [
        (opt) => opt.configureMetrics((m) => void (m.requestDurationBuckets = [])),
        /metrics\.requestDurationBuckets = \[\]/,
      ],
    ];
    for (const [configure, message] of cases) {
      assert.throws(
        () => addKit(Fastify(), configure),
        (err: Error & { code?: string }) =>
          err.code === 'KIT_ERR_INVALID_OPTION' && message.test(err.message),
      );
    }
  });
});

/** The request histogram's `_count` series: label set -> count. */
function requestCounts(text: string, prefix = 'kit_'): Map<string, number> {
  const out = new Map<string, number>();
  for (const [key, value] of samples(text)) {
    if (key.startsWith(`${prefix}http_request_duration_seconds_count{`))
      out.set(key.slice(key.indexOf('{')), value);
  }
  return out;
}

class OrdersEndpoint implements IKitEndpoint {
  addRoutes(group: EndpointApp): void {
    // A relative path: Fastify's own routeOptions.url says /api/orders{id} for it.
    group.get('{id}', async () => ({ id: 1 }));
    group.get('fail', async () => {
      throw new Error('boom');
    });
  }
}

describe('per-route request metrics', () => {
  async function routed(
    configure: (opt: KitOption) => void = (opt) => opt.configureMetrics(),
  ): Promise<FastifyInstance> {
    const a = Fastify();
    addKit(a, [OrdersEndpoint], (opt) => {
      opt.openApiPath = false;
      configure(opt);
    });
    a.get('/items/:id', async () => ({ ok: true }));
    await useKit(a);
    await a.ready();
    return a;
  }

  it('count by method, route pattern and status class, with a duration histogram; the pattern of relative Kit routes, never the URL', async () => {
    const a = await routed();
    for (let i = 0; i < 5; i++) await a.inject(`/items/${i}`);
    for (let i = 0; i < 3; i++) await a.inject(`/api/orders/${i}`);
    await a.inject('/api/orders/fail');
    await a.inject({ method: 'POST', url: '/items/1' });
    await a.inject({ method: 'DELETE', url: '/nowhere/at/all' });
    const text = (await a.inject('/metrics')).body;
    const counts = requestCounts(text);
    assert.equal(counts.get('{method="GET",route="/items/:id",status_class="2xx"}'), 5);
    assert.equal(counts.get('{method="GET",route="/api/orders/:id",status_class="2xx"}'), 3);
    assert.equal(counts.get('{method="GET",route="/api/orders/fail",status_class="5xx"}'), 1);
    assert.equal(counts.get('{method="POST",route="(unmatched)",status_class="4xx"}'), 1);
    assert.equal(counts.get('{method="DELETE",route="(unmatched)",status_class="4xx"}'), 1);
    assert.doesNotMatch(text, /items\/[0-9]|orders\/[0-9]|nowhere|orders\{id\}/);
    assert.match(text, /# TYPE kit_http_request_duration_seconds histogram/);
    assert.equal(
      samples(text).get(
        'kit_http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/items/:id",status_class="2xx"}',
      ),
      5,
    );
    const sum =
      samples(text).get(
        'kit_http_request_duration_seconds_sum{method="GET",route="/items/:id",status_class="2xx"}',
      ) ?? -1;
    assert.ok(sum > 0 && sum < 5, `duration sum ${sum} s`);
    await a.close();
  });

  it('a 404 flood creates no series: 2000 distinct unknown URLs and odd methods all count under (unmatched)', async () => {
    const a = await routed();
    await a.inject('/items/1');
    const before = requestCounts((await a.inject('/metrics')).body);
    const methods = ['GET', 'POST', 'PUT', 'PROPFIND', 'MKCOL'];
    for (let i = 0; i < 2000; i++) {
      await a.inject({
        method: methods[i % methods.length] as 'GET',
        url: `/scan/${i}/${Math.random().toString(36).slice(2)}?q=${i}`,
      });
    }
    const after = requestCounts((await a.inject('/metrics')).body);
    const added = [...after.keys()].filter((k) => !before.has(k));
    // Each odd method is OTHER, each class once; the scrapes themselves add /metrics.
    assert.ok(added.length <= 6, added.join('\n'));
    for (const key of added) assert.match(key, /route="\(unmatched\)"|route="\/metrics"/);
    const unmatched = [...after]
      .filter(([k]) => k.includes('(unmatched)'))
      .reduce((n, [, v]) => n + v, 0);
    assert.equal(unmatched, 2000);
    assert.doesNotMatch([...after.keys()].join(' '), /scan|PROPFIND|MKCOL/);
    await a.close();
  });

  it('requestMetrics = false leaves them out; the audit and health metrics stay', async () => {
    const a = await routed((opt) => opt.configureMetrics((m) => void (m.requestMetrics = false)));
    await a.inject('/items/1');
    await a.inject('/healthz');
    const text = (await a.inject('/metrics')).body;
    assert.doesNotMatch(text, /http_request_duration_seconds/);
    assert.match(text, /kit_health_check_status|kit_health_check_duration/);
    await a.close();
  });
});
