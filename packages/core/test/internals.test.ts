// @test-lines: every - Fastify's and pino's private state as this line runs them
// Kit's reads of Fastify's and pino's private state (src/internals/) must not fall back silently:
// on the Fastify and pino this run has installed, every read that those versions can serve must
// find what it expects. `.ci/run` runs this file (with the audit and JWT suites) against the oldest
// and newest Fastify 5 and pino the peer ranges admit; a release that renames or reshapes one of
// them fails here instead of writing a slower, or less redacted, log.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import pino from 'pino';
import { addKit, AuditTrailFormat, LoggingAuditSink, useKit, type AuditLogEntry } from '@kit/core';
import { DEFAULT_FIELD_KEYS } from '../src/audit/formats.js';
import { PinoLines } from '../src/audit/pino-lines.js';
import {
  fastifyContextHooks,
  fastifyLogController,
  fastifyRouteContext,
  pinoDestinationOf,
  pinoLoggerState,
  sonicBoomWriting,
} from '../src/internals/index.js';
import { Chunks } from './audit-helpers.js';

/** `a.b.c` as a number for comparison (no pre-release tags in the versions compared here). */
function versionNumber(version: string): number {
  const [major = 0, minor = 0, patch = 0] = version.split('.').map((n) => Number.parseInt(n, 10));
  return major * 1e6 + minor * 1e3 + patch;
}

const entry: AuditLogEntry = {
  timestamp: '2026-11-21T10:00:00.000Z',
  method: 'GET',
  path: '/api/orders/7',
  query: 'page=2&token=***',
  statusCode: 200,
  durationMs: 1.25,
  correlationId: 'c-1',
  headers: { host: 'example.test' },
  route: '/api/orders/:id',
};

// The pino copies a host's logger can come from: Fastify's own dependency (what `logger: true`
// builds) and the `pino` package the workspace resolves (pino 10 in the matrix's newest
// combination, handed to Fastify as `loggerInstance`).
const fastifyPino = createRequire(fileURLToPath(import.meta.resolve('fastify')))(
  'pino',
) as typeof pino;
const pinos: Array<[string, typeof pino]> = [
  [`Fastify's own pino ${fastifyPino.version}`, fastifyPino],
  [`the pino package ${pino.version}`, pino],
];

describe('private reads of Fastify', () => {
  it("the log controller: found on Fastify 5.10 and later; before, Kit's start-up warning instead", async (t) => {
    const app = Fastify({ logger: false });
    const hasController = versionNumber(app.version) >= versionNumber('5.10.0');
    t.diagnostic(`fastify ${app.version}`);
    const slot = fastifyLogController(app);
    if (!hasController) {
      assert.equal(slot, undefined);
      // The documented fallback: the audit trail says it cannot keep Fastify's request lines quiet,
      // unless the host turned them off itself.
      for (const disableRequestLogging of [false, true]) {
        const log = new Chunks();
        const instance = Fastify({ logger: { stream: log }, disableRequestLogging });
        addKit(instance, [], (opt) => opt.configureAuditTrail());
        await useKit(instance);
        const warned = log.text.includes('this Fastify has no log controller');
        assert.equal(warned, !disableRequestLogging);
        await instance.close();
      }
      return;
    }
    assert.ok(slot, `Fastify ${app.version} has a log controller, but Kit's read of it fell back`);
    assert.equal(typeof slot.controller.incomingRequest, 'function');
    // Replacing it is what Fastify sees: its own 'incoming request' goes through the new one.
    const log = new Chunks();
    const instance = Fastify({ logger: { stream: log } });
    const own = fastifyLogController(instance);
    assert.ok(own);
    let seen = 0;
    own.replace(
      Object.create(own.controller, { incomingRequest: { value: () => void seen++ } }) as Record<
        string,
        unknown
      >,
    );
    instance.get('/x', async () => 'ok');
    await instance.inject('/x');
    assert.equal(seen, 1);
    assert.ok(!log.text.includes('incoming request'));
    await instance.close();
  });

  it("each context's own hooks, as added (unbound), at the root and in a plugin", async () => {
    const app = Fastify();
    const read = fastifyContextHooks(app);
    assert.ok(read, `Kit's read of the context hooks fell back on Fastify ${app.version}`);
    const rootHook = async (): Promise<void> => {};
    const childHook = async (): Promise<void> => {};
    app.addHook('onRequest', rootHook);
    let child: FastifyInstance | undefined;
    await app.register(async (instance) => {
      child = instance;
      instance.addHook('preHandler', childHook);
    });
    await app.ready();
    assert.ok(read(app, 'onRequest')?.includes(rootHook));
    assert.ok(child);
    assert.ok(
      read(child, 'onRequest')?.includes(rootHook),
      'a plugin context inherits the hooks added before it',
    );
    assert.ok(read(child, 'preHandler')?.includes(childHook));
    assert.ok(!read(app, 'preHandler')?.includes(childHook));
    await app.close();
  });

  it("each request's route context: one object per route, one for the unmatched, holding the route's config", async () => {
    const app = Fastify();
    const read = fastifyRouteContext();
    const seen: Array<{ url: string; context: unknown }> = [];
    app.addHook('onResponse', async (request) => {
      seen.push({ url: request.url, context: read(request) });
    });
    app.get('/a/:id', async () => 'a');
    app.get('/b', async () => 'b');
    for (const url of ['/a/1', '/a/2', '/b', '/nowhere', '/elsewhere']) await app.inject(url);
    const [a1, a2, b, miss1, miss2] = seen.map(
      (s) => s.context as { config: { url?: unknown } } | undefined,
    );
    assert.ok(
      a1 && a2 && b && miss1 && miss2,
      `Kit's read of the route context fell back on Fastify ${app.version}`,
    );
    assert.equal(a1, a2, 'two requests of one route share its context');
    assert.notEqual(a1, b);
    assert.equal(miss1, miss2, 'every unmatched request shares one context');
    assert.notEqual(miss1, a1);
    assert.equal(a1.config.url, '/a/:id');
    assert.equal(b.config.url, '/b');
    await app.close();
  });

  it('fall back, without throwing, on anything that is not the expected shape', () => {
    const fake = {} as FastifyInstance;
    assert.equal(fastifyLogController(fake), undefined);
    assert.equal(fastifyContextHooks(fake), undefined);
    assert.equal(fastifyRouteContext()({} as FastifyRequest), undefined);
    assert.equal(
      fastifyRouteContext()({
        [Symbol('fastify.context')]: { config: 1 },
      } as unknown as FastifyRequest),
      undefined,
    );
    const odd = {
      [Symbol('fastify.logController')]: { incomingRequest: 1 },
      [Symbol('fastify.hooks')]: { onRequest: 'x' },
    } as unknown as FastifyInstance;
    assert.equal(fastifyLogController(odd), undefined);
    assert.equal(fastifyContextHooks(odd), undefined);
  });
});

describe('private reads of pino', () => {
  for (const [name, module] of pinos) {
    it(`${name}: the audit lines take the direct path and write what pino writes`, () => {
      const out = new Chunks();
      const twinOut = new Chunks();
      const timestamp = (): string => ',"time":1700000000000';
      const logger = module({ level: 'info', timestamp }, out);
      // The same logger on pino's generic path (an identity `formatters.log`), for the reference line.
      const twin = module(
        { level: 'info', timestamp, formatters: { log: (o: Record<string, unknown>) => o } },
        twinOut,
      );
      assert.ok(pinoLoggerState(logger), `Kit's read of ${name}'s state fell back`);
      assert.ok(
        PinoLines.create(logger, DEFAULT_FIELD_KEYS),
        `the direct audit lines are not taken for ${name} with pino's defaults`,
      );
      assert.equal(PinoLines.create(twin, DEFAULT_FIELD_KEYS), undefined);
      assert.equal(pinoDestinationOf(logger), out);
      for (const logFormat of Object.values(AuditTrailFormat)) {
        new LoggingAuditSink(logger, { logFormat }).writeMany([entry, entry], 0, 2);
        new LoggingAuditSink(twin, { logFormat }).writeMany([entry, entry], 0, 2);
      }
      assert.equal(out.text, twinOut.text);
      assert.equal(out.writes.length, 4, 'one destination write per batch');
    });
  }

  it("Fastify's own logger (logger: true) takes the direct path", () => {
    const app = Fastify({ logger: { level: 'info', stream: new Chunks() } });
    assert.ok(
      PinoLines.create(app.log, DEFAULT_FIELD_KEYS),
      `not on Fastify ${app.version} with pino ${fastifyPino.version}`,
    );
  });

  it("sonic-boom's write-in-flight flag is a boolean on pino's own destination", async () => {
    const destination = pino.destination({ dest: '/dev/null', sync: false });
    await new Promise((resolve) => destination.once('ready', resolve));
    assert.equal(
      typeof sonicBoomWriting(destination),
      'boolean',
      "Kit's read of sonic-boom's _writing fell back",
    );
    destination.end();
  });

  it('fall back, without throwing, on a logger that is not pino', () => {
    assert.equal(pinoLoggerState({}), undefined);
    assert.equal(pinoLoggerState({ [Symbol('pino.lsCache')]: 1 }), undefined);
    assert.equal(pinoDestinationOf({}), undefined);
    assert.equal(sonicBoomWriting({ _writing: 'yes' }), undefined);
    const lines: string[] = [];
    const plain = {
      info: (o: unknown, m: string) => void lines.push(m),
      warn() {},
      error() {},
      debug() {},
      trace() {},
      fatal() {},
      level: 'info',
    };
    new LoggingAuditSink(plain as never).write(entry);
    assert.equal(lines.length, 1);
  });
});
