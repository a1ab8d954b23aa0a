// @test-lines: once - the service container
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { asClass, asFunction, asValue, createContainer, InjectionMode } from 'awilix';
import { addKit, useKit, type IKitEndpoint } from '@kit/core';

class Greeter {
  greet(name: string) {
    return `hello ${name}`;
  }
}

// Dependencies are destructured in the constructor: awilix resolves on access, so this is what
// makes a missing one fail start-up rather than the first request.
class GreetingEndpoint implements IKitEndpoint {
  readonly #greeter: Greeter;
  constructor({ greeter }: { greeter: Greeter }) {
    this.#greeter = greeter;
  }
  addRoutes(app: FastifyInstance) {
    app.get('hi', async () => this.#greeter.greet('ada'));
  }
}

describe('service container', () => {
  it('endpoint classes receive constructor dependencies from app.kit.services', async () => {
    const app = Fastify();
    addKit(app, [GreetingEndpoint]).services.register({ greeter: asClass(Greeter).singleton() });
    await useKit(app);
    assert.equal((await app.inject('/api/greeting/hi')).body, 'hello ada');
    await app.close();
  });

  it('a missing endpoint dependency fails useKit naming the dependency and the class', async () => {
    const app = Fastify();
    addKit(app, [GreetingEndpoint]);
    await assert.rejects(useKit(app), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_DEPENDENCY');
      assert.match(err.message, /Missing dependency 'greeter' needed by GreetingEndpoint/);
      return true;
    });
    assert.equal(app.kit.state, 'starting');
  });

  it('a dependency read lazily (not in the constructor) is only found missing by the request that needs it', async () => {
    class LazyEndpoint implements IKitEndpoint {
      constructor(private readonly deps: { greeter: Greeter }) {}
      addRoutes(a: FastifyInstance) {
        a.get('hi', async () => this.deps.greeter.greet('x'));
      }
    }
    const app = Fastify();
    addKit(app, [LazyEndpoint]);
    await useKit(app);
    assert.equal(
      (await app.inject('/api/lazy/hi')).statusCode,
      500,
      'why the README says: destructure in the constructor',
    );
    await app.close();
  });

  it('DI validation: a registration whose own dependency is missing fails start-up naming both', async () => {
    const app = Fastify();
    const kit = addKit(app, []);
    kit.services.register({
      reportService: asFunction(({ database }: { database: unknown }) => ({
        database,
      })).singleton(),
    });
    await assert.rejects(useKit(app), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_DEPENDENCY');
      assert.match(err.message, /Missing dependency 'database' needed by 'reportService'/);
      return true;
    });
  });

  it('uses a container the host passes', async () => {
    const container = createContainer({ injectionMode: InjectionMode.PROXY });
    container.register({ greeter: asClass(Greeter).singleton() });
    const app = Fastify();
    const kit = addKit(app, [GreetingEndpoint], (opt) => {
      opt.container = container;
    });
    assert.equal(kit.services, container);
    await useKit(app);
    assert.equal((await app.inject('/api/greeting/hi')).statusCode, 200);
    await app.close();
  });

  it('start-up order: endpoint classes and routes, DI validation (which builds singletons once), warm-ups in parallel, then the gate', async () => {
    const events: string[] = [];
    class Cache {
      constructor() {
        events.push('singleton:cache');
      }
    }
    class Mailer {
      constructor() {
        events.push('singleton:mailer');
      }
    }
    class ShopEndpoint implements IKitEndpoint {
      constructor() {
        events.push('endpoint:constructed');
      }
      addRoutes(a: FastifyInstance) {
        a.get('x', async () => 1);
        events.push('endpoint:routes');
      }
    }
    class PrimeCache {
      async warmup(signal: AbortSignal) {
        events.push(`warmup:class:start:${signal.aborted}`);
        await new Promise((r) => setTimeout(r, 30));
        events.push('warmup:class:done');
      }
    }
    const app = Fastify();
    const kit = addKit(app, [ShopEndpoint], (opt) => {
      opt.eagerSingletons = ['cache'];
      opt.configureWarmup(async () => {
        events.push(`warmup:fn:start:${app.kit.state}`);
        await new Promise((r) => setTimeout(r, 30));
        events.push('warmup:fn:done');
      });
      opt.configureWarmup(PrimeCache);
    });
    kit.services.register({
      cache: asClass(Cache).singleton(),
      mailer: asClass(Mailer).singleton(),
    });
    await useKit(app);
    events.push(`state:${app.kit.state}`);
    assert.deepEqual(events.slice(0, 4), [
      'endpoint:constructed',
      'endpoint:routes',
      'singleton:cache',
      'singleton:mailer',
    ]);
    assert.deepEqual(
      events.slice(4, 6),
      ['warmup:fn:start:starting', 'warmup:class:start:false'],
      'both warm-ups start before either ends',
    );
    assert.deepEqual(events.slice(6, 8).sort(), ['warmup:class:done', 'warmup:fn:done']);
    assert.equal(events.at(-1), 'state:ready');
    assert.equal(
      events.filter((e) => e === 'singleton:cache').length,
      1,
      'the eager singleton is built once',
    );
    await app.close();
  });

  it('an eager singleton that is not registered fails start-up naming it', async () => {
    const app = Fastify();
    addKit(app, [], (opt) => {
      opt.eagerSingletons = ['ghost'];
    });
    await assert.rejects(useKit(app), /eagerSingletons names 'ghost'/);
  });

  it('a warm-up that ignores its signal cannot hang start-up: KIT_ERR_WARMUP_TIMEOUT and the signal aborts', async () => {
    let seen: AbortSignal | undefined;
    const app = Fastify();
    addKit(app, [], (opt) => {
      opt.warmupTimeoutMs = 100;
      opt.configureWarmup((signal) => {
        seen = signal;
        return new Promise(() => {});
      });
    });
    const started = Date.now();
    await assert.rejects(useKit(app), { code: 'KIT_ERR_WARMUP_TIMEOUT' });
    assert.ok(Date.now() - started < 5000, 'rejected near the timeout, not never');
    assert.equal(seen?.aborted, true);
    assert.equal(app.kit.state, 'starting', 'the gate stays closed');
  });

  it('a failing warm-up rejects useKit with its cause', async () => {
    const app = Fastify();
    addKit(app, [], (opt) =>
      opt.configureWarmup(async () => {
        throw new Error('cache server refused');
      }),
    );
    await assert.rejects(useKit(app), /cache server refused/);
    assert.equal(app.kit.state, 'starting');
  });

  it("a plugin adds a warm-up with app.kit.addWarmup: it runs with the host's, before the gate opens; its failure fails start-up; after useKit it is refused", async () => {
    const events: string[] = [];
    const app = Fastify();
    addKit(app, [], (opt) =>
      opt.configureWarmup(async () => {
        events.push(`host:${app.kit.state}`);
      }),
    );
    app.kit.addWarmup(async (signal) => {
      events.push(`plugin:${app.kit.state}:${signal.aborted}`);
    });
    assert.throws(() => app.kit.addWarmup('not a task' as never), {
      code: 'KIT_ERR_INVALID_OPTION',
    });
    await useKit(app);
    assert.deepEqual(events, ['host:starting', 'plugin:starting:false']);
    assert.throws(() => app.kit.addWarmup(async () => undefined), { code: 'KIT_ERR_ALREADY_USED' });
    await app.close();

    const failing = Fastify();
    addKit(failing, []);
    failing.kit.addWarmup(async () => {
      throw new Error('plugin database refused');
    });
    await assert.rejects(useKit(failing), /plugin database refused/);
    assert.equal(failing.kit.state, 'starting', 'the gate stays closed');
  });

  it('registered values are resolvable by endpoint classes through asValue', async () => {
    const app = Fastify();
    class ConfigEndpoint implements IKitEndpoint {
      constructor(private readonly deps: { region: string }) {}
      addRoutes(a: FastifyInstance) {
        a.get('region', async () => this.deps.region);
      }
    }
    addKit(app, [ConfigEndpoint]).services.register({ region: asValue('eu-west-1') });
    await useKit(app);
    assert.equal((await app.inject('/api/config/region')).body, 'eu-west-1');
    await app.close();
  });

  it('listen before useKit settles, then start-up fails: no unhandled rejection, the cause is logged, /healthz stays 503', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const lines: string[] = [];
    const app = Fastify({
      logger: { level: 'error', stream: { write: (line: string) => lines.push(line) } },
    });
    addKit(app, [], (opt) =>
      opt.configureWarmup(async () => {
        throw new Error('search index unreachable');
      }),
    );
    try {
      const ready = useKit(app);
      await app.listen({ port: 0, host: '127.0.0.1' });
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(unhandled, [], 'useKit rejected without killing the process');
      await assert.rejects(ready, /search index unreachable/);
      const log = lines
        .map((l) => JSON.parse(l) as { msg: string; err?: { message: string } })
        .find((l) => /start-up failed/.test(l.msg));
      assert.equal(log?.err?.message, 'search index unreachable');
      const res = await app.inject('/healthz');
      assert.equal(res.statusCode, 503);
      assert.equal(
        res.json<{ checks: Record<string, unknown> }>().checks.startup !== undefined,
        true,
      );
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await app.close();
    }
  });

  it('useKit after app.ready() is KIT_ERR_ALREADY_USED with the fix in the message', async () => {
    const app = Fastify();
    addKit(app, []);
    await assert.rejects(async () => void (await app.ready()), { code: 'KIT_ERR_USE_KIT_MISSING' });
    await assert.rejects(useKit(app), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_ALREADY_USED');
      assert.match(err.message, /before app\.ready\(\) or app\.listen\(\)|call it before/);
      return true;
    });
    await app.close();
  });

  it('a failing addKit (duplicate health check name) leaves the instance untouched, so it can be retried', async () => {
    const app = Fastify();
    const check = () => ({ status: 'healthy' as const });
    assert.throws(
      () =>
        addKit(app, [], (opt) => {
          opt.healthChecksConfigure = (hc) => hc.addCheck('db', check).addCheck('db', check);
        }),
      {
        code: 'KIT_ERR_DUPLICATE_HEALTH_CHECK',
      },
    );
    assert.equal(app.hasDecorator('kit'), false);
    addKit(app, [], (opt) => {
      opt.healthChecksConfigure = (hc) => hc.addCheck('db', check);
    });
    await useKit(app);
    assert.equal((await app.inject('/healthz')).statusCode, 200);
    await app.close();
  });
});
