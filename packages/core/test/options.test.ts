// @test-lines: once - validates options
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import pino from 'pino';
import { createContainer, InjectionMode } from 'awilix';
import { addKit, HealthCheckResult, type KitOption } from '@kit/core';

function fails(configure: (opt: KitOption) => void, option: string, value: string): void {
  const app = Fastify();
  assert.throws(
    () => addKit(app, configure),
    (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_INVALID_OPTION', err.message);
      assert.ok(err.message.includes(option), `names the option ${option}: ${err.message}`);
      assert.ok(err.message.includes(value), `names the value ${value}: ${err.message}`);
      return true;
    },
  );
}

describe('bad configuration fails addKit at once, naming the option and the value', () => {
  const o = (f: (opt: KitOption) => void) => f;
  const cases: Array<[string, (opt: KitOption) => void, string, string]> = [
    [
      'format',
      o((x) => {
        (x as { format: string }).format = 'KebabCase';
      }),
      'format',
      '"KebabCase"',
    ],
    [
      'apiPrefix with a space',
      o((x) => {
        x.apiPrefix = 'my api';
      }),
      'apiPrefix',
      '"my api"',
    ],
    [
      'apiPrefix with a query',
      o((x) => {
        x.apiPrefix = 'api?x=1';
      }),
      'apiPrefix',
      '"api?x=1"',
    ],
    [
      'invalid suffix regex',
      o((x) => {
        x.groupNameSuffixPattern = '(Endpoint|';
      }),
      'groupNameSuffixPattern',
      '"(Endpoint|"',
    ],
    [
      'invalid version regex',
      o((x) => {
        x.versionFormatPattern = 'V(\\d+';
      }),
      'versionFormatPattern',
      '"V(\\\\d+"',
    ],
    [
      'empty suffix pattern',
      o((x) => {
        x.groupNameSuffixPattern = '';
      }),
      'groupNameSuffixPattern',
      '""',
    ],
    [
      'version replacement not a string',
      o((x) => {
        (x as { versionFormatReplacement: unknown }).versionFormatReplacement = 5;
      }),
      'versionFormatReplacement',
      '5',
    ],
    [
      'relative health path',
      o((x) => {
        x.healthCheckPath = 'healthz';
      }),
      'healthCheckPath',
      '"healthz"',
    ],
    [
      'health path with trailing slash',
      o((x) => {
        x.healthCheckPath = '/healthz/';
      }),
      'healthCheckPath',
      '"/healthz/"',
    ],
    [
      'health path /livez',
      o((x) => {
        x.healthCheckPath = '/livez';
      }),
      'healthCheckPath',
      '"/livez"',
    ],
    [
      'enableHealthChecks not boolean',
      o((x) => {
        (x as { enableHealthChecks: unknown }).enableHealthChecks = 'no';
      }),
      'enableHealthChecks',
      '"no"',
    ],
    [
      'detail level',
      o((x) => {
        (x as { healthCheckDetailLevel: unknown }).healthCheckDetailLevel = 'Verbose';
      }),
      'healthCheckDetailLevel',
      '"Verbose"',
    ],
    [
      'health path with a wildcard',
      o((x) => {
        x.healthCheckPath = '/h*';
      }),
      'healthCheckPath',
      '"/h*"',
    ],
    [
      'health path with a dot-dot segment',
      o((x) => {
        x.healthCheckPath = '/a/..';
      }),
      'healthCheckPath',
      '"/a/.."',
    ],
    [
      'health path equal to the document path',
      o((x) => {
        x.healthCheckPath = '/openapi.json';
      }),
      'healthCheckPath',
      '/openapi.json and /openapi.json',
    ],
    [
      'health path below the UI path',
      o((x) => {
        x.healthCheckPath = '/docs/health';
      }),
      'healthCheckPath',
      '/docs/health and /docs',
    ],
    [
      'apiPrefix with a regex group',
      o((x) => {
        x.apiPrefix = 'api(v1)';
      }),
      'apiPrefix',
      '"api(v1)"',
    ],
    [
      'container in CLASSIC mode',
      o((x) => {
        x.container = createContainer({ injectionMode: InjectionMode.CLASSIC });
      }),
      'container',
      'CLASSIC',
    ],
    [
      'openApiPath relative',
      o((x) => {
        x.openApiPath = 'openapi.json';
      }),
      'openApiPath',
      '"openapi.json"',
    ],
    [
      'docsPath with space',
      o((x) => {
        x.docsPath = '/my docs';
      }),
      'docsPath',
      '"/my docs"',
    ],
    [
      'eagerSingletons not names',
      o((x) => {
        (x as { eagerSingletons: unknown }).eagerSingletons = [1];
      }),
      'eagerSingletons',
      '[1]',
    ],
    [
      'warmupTimeoutMs zero',
      o((x) => {
        x.warmupTimeoutMs = 0;
      }),
      'warmupTimeoutMs',
      '0',
    ],
    [
      'warmupTimeoutMs NaN',
      o((x) => {
        x.warmupTimeoutMs = Number.NaN;
      }),
      'warmupTimeoutMs',
      'NaN',
    ],
    [
      'auditSinkFactory not a function',
      o((x) => {
        (x as { auditSinkFactory: unknown }).auditSinkFactory = {};
      }),
      'auditSinkFactory',
      '{}',
    ],
    [
      'applicationVersion empty',
      o((x) => {
        x.applicationVersion = '';
      }),
      'applicationVersion',
      '""',
    ],
    [
      'batch size 0',
      o((x) =>
        x.configureAuditTrail((a) => {
          a.batchSize = 0;
        }),
      ),
      'auditTrail.batchSize',
      '0',
    ],
    [
      'batch size over capacity',
      o((x) =>
        x.configureAuditTrail((a) => {
          a.batchSize = 5000;
        }),
      ),
      'auditTrail.batchSize',
      '5000',
    ],
    [
      'flush interval negative',
      o((x) =>
        x.configureAuditTrail((a) => {
          a.flushIntervalMs = -1;
        }),
      ),
      'auditTrail.flushIntervalMs',
      '-1',
    ],
    [
      'log level unknown',
      o((x) =>
        x.configureAuditTrail((a) => {
          (a as { errorLogLevel: string }).errorLogLevel = 'critical';
        }),
      ),
      'auditTrail.errorLogLevel',
      '"critical"',
    ],
    [
      'correlation header with CR/LF',
      o((x) =>
        x.configureAuditTrail((a) => {
          a.correlationIdHeader = 'X-Id\r\nEvil: 1';
        }),
      ),
      'auditTrail.correlationIdHeader',
      '"X-Id\\r\\nEvil: 1"',
    ],
    [
      'exclude path relative',
      o((x) =>
        x.configureAuditTrail((a) => {
          a.excludePaths = ['metrics'];
        }),
      ),
      'auditTrail.excludePaths',
      '"metrics"',
    ],
    [
      'audit format unknown',
      o((x) =>
        x.configureAuditTrail((a) => {
          (a as { logFormat: string }).logFormat = 'Xml';
        }),
      ),
      'auditTrail.logFormat',
      '"Xml"',
    ],
    [
      'jwt authority not a URL',
      o((x) => x.configureJwt('login.example.com', ['api'])),
      'configureJwt(authority)',
      '"login.example.com"',
    ],
    [
      'jwt authority ftp',
      o((x) => x.configureJwt('ftp://login.example.com', ['api'])),
      'configureJwt(authority)',
      '"ftp://login.example.com"',
    ],
    [
      'jwt audiences empty',
      o((x) => x.configureJwt('https://login.example.com', [])),
      'configureJwt(audiences)',
      '[]',
    ],
    [
      'shutdown delay negative',
      o((x) =>
        x.configureGracefulShutdown((g) => {
          g.shutdownDelayMs = -5;
        }),
      ),
      'gracefulShutdown.shutdownDelayMs',
      '-5',
    ],
    [
      'shutdown signals empty',
      o((x) =>
        x.configureGracefulShutdown((g) => {
          g.signals = [];
        }),
      ),
      'gracefulShutdown.signals',
      '[]',
    ],
    [
      'warm-up not a function',
      o((x) => x.configureWarmup('load' as never)),
      'configureWarmup(task)',
      '"load"',
    ],
    [
      'warm-up class without warmup()',
      o((x) => x.configureWarmup(class Foo {} as never)),
      'configureWarmup(task)',
      '[class Foo]',
    ],
    [
      'configureAuditTrail action not a function',
      o((x) => x.configureAuditTrail('x' as never)),
      'configureAuditTrail(action)',
      '"x"',
    ],
    [
      'configureGracefulShutdown action not a function',
      o((x) => x.configureGracefulShutdown(42 as never)),
      'configureGracefulShutdown(action)',
      '42',
    ],
    [
      'suffix pattern with the g flag',
      o((x) => {
        x.groupNameSuffixPattern = /Endpoint$/g;
      }),
      'groupNameSuffixPattern',
      '/Endpoint$/g',
    ],
    [
      'version pattern with the y flag',
      o((x) => {
        x.versionFormatPattern = /V(\d+)/y;
      }),
      'versionFormatPattern',
      '/V(\\d+)/y',
    ],
    ['async configure callback', o(async () => {}), 'addKit(app, configure)', 'returned a promise'],
    [
      'async configureAuditTrail action',
      o((x) => x.configureAuditTrail(async () => {})),
      'configureAuditTrail(action)',
      'returned a promise',
    ],
    [
      'async configureGracefulShutdown action',
      o((x) => x.configureGracefulShutdown(async () => {})),
      'configureGracefulShutdown(action)',
      'returned a promise',
    ],
    [
      'async healthChecksConfigure',
      o((x) => {
        x.healthChecksConfigure = async () => {};
      }),
      'healthChecksConfigure',
      'returned a promise',
    ],
    [
      'a method assigned instead of called',
      o((x) => {
        (x as unknown as Record<string, unknown>).configureJwt = 'https://login.example.com';
      }),
      'configureJwt',
      'call it as opt.configureJwt(...)',
    ],
  ];
  for (const [title, configure, option, value] of cases) {
    it(title, () => fails(configure, option, value));
  }

  it('addKit twice on one instance, and useKit without addKit, are errors with codes', async () => {
    const app = Fastify();
    addKit(app);
    assert.throws(() => addKit(app), { code: 'KIT_ERR_ALREADY_ADDED' });
    const { useKit } = await import('@kit/core');
    await assert.rejects(useKit(Fastify()), { code: 'KIT_ERR_NOT_ADDED' });
  });

  it('accepts any Fastify instance: a custom pino loggerInstance changes its type, not whether addKit takes it', async () => {
    const app = Fastify({ loggerInstance: pino({ level: 'silent' }) });
    const kit = addKit(app);
    const { useKit } = await import('@kit/core');
    await useKit(app);
    assert.equal(kit.state, 'ready');
    await app.close();
  });
});

describe('configuration mistakes that passed silently or threw raw errors get coded ones', () => {
  it('an unknown option name is KIT_ERR_UNKNOWN_OPTION with its value and the closest known name', () => {
    const cases: Array<[(opt: KitOption) => void, string]> = [
      [
        (opt) => void ((opt as unknown as Record<string, unknown>).apiPrefx = 'v1'),
        'Unknown Kit option apiPrefx = "v1": did you mean apiPrefix?',
      ],
      [
        (opt) => void ((opt as unknown as Record<string, unknown>).healthcheckpath = '/health'),
        'Unknown Kit option healthcheckpath = "/health": did you mean healthCheckPath?',
      ],
      [
        (opt) =>
          opt.configureGracefulShutdown(
            (g) => void ((g as unknown as Record<string, unknown>).shutdownDelay = 100),
          ),
        'Unknown Kit option gracefulShutdown.shutdownDelay = 100: did you mean gracefulShutdown.shutdownDelayMs?',
      ],
      [
        (opt) =>
          opt.configureAuditTrail(
            (a) => void ((a as unknown as Record<string, unknown>).asyncWrites = true),
          ),
        'Unknown Kit option auditTrail.asyncWrites = true: did you mean auditTrail.asyncWrite?',
      ],
    ];
    for (const [configure, message] of cases) {
      assert.throws(
        () => addKit(Fastify(), configure),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, 'KIT_ERR_UNKNOWN_OPTION');
          assert.equal(err.message, message);
          return true;
        },
      );
    }
    assert.throws(
      () => addKit(Fastify(), (opt) => void ((opt as unknown as Record<string, unknown>).zzz = 1)),
      (err: Error & { code?: string }) =>
        err.code === 'KIT_ERR_UNKNOWN_OPTION' &&
        /zzz = 1: the known options are format, apiPrefix, .*warmupTimeoutMs, problemDetails\./.test(
          err.message,
        ),
    );
  });

  it('a configure callback that throws is KIT_ERR_CONFIGURE_FAILED naming the option, with the error as cause and secrets masked', () => {
    const boom = new Error('cannot reach postgres://orders:s3cr3t@db:5432/orders');
    const cases: Array<[(opt: KitOption) => void, string]> = [
      [
        () => {
          throw boom;
        },
        'addKit(app, configure)',
      ],
      [
        (opt) =>
          opt.configureAuditTrail(() => {
            throw boom;
          }),
        'configureAuditTrail(action)',
      ],
      [
        (opt) =>
          opt.configureGracefulShutdown(() => {
            throw boom;
          }),
        'configureGracefulShutdown(action)',
      ],
      [
        (opt) => {
          opt.healthChecksConfigure = () => {
            throw boom;
          };
        },
        'healthChecksConfigure',
      ],
    ];
    for (const [configure, option] of cases) {
      assert.throws(
        () => addKit(Fastify(), configure),
        (err: Error & { code?: string; cause?: unknown }) => {
          assert.equal(err.code, 'KIT_ERR_CONFIGURE_FAILED', err.message);
          assert.ok(err.message.startsWith(`Kit option ${option} = [function`), err.message);
          assert.match(
            err.message,
            /threw Error: cannot reach postgres:\/\/\*\*\*@db:5432\/orders/,
          );
          assert.ok(!err.message.includes('s3cr3t'), err.message);
          assert.equal(err.cause, boom);
          return true;
        },
      );
    }
  });

  it('a KitError thrown inside a configure callback keeps its own code', () => {
    assert.throws(
      () =>
        addKit(Fastify(), (opt) => {
          opt.healthChecksConfigure = (hc) =>
            hc
              .addCheck('a', () => HealthCheckResult.healthy())
              .addCheck('a', () => HealthCheckResult.healthy());
        }),
      { code: 'KIT_ERR_DUPLICATE_HEALTH_CHECK' },
    );
  });

  it('an async callback that rejects does not leave an unhandled rejection behind', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      assert.throws(
        () =>
          addKit(Fastify(), async () => {
            throw new Error('late');
          }),
        { code: 'KIT_ERR_INVALID_OPTION' },
      );
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('an auditSinkFactory that throws fails useKit with KIT_ERR_CONFIGURE_FAILED; one that returns a promise with KIT_ERR_INVALID_OPTION; a missing registration with KIT_ERR_DEPENDENCY', async () => {
    const { useKit } = await import('@kit/core');
    const throwing = Fastify();
    addKit(throwing, (opt) => {
      opt.configureAuditTrail();
      opt.auditSinkFactory = function makeSink() {
        throw new Error('audit disk full: Password=hunter2');
      };
    });
    await assert.rejects(useKit(throwing), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_CONFIGURE_FAILED');
      assert.equal(
        err.message,
        'Kit option auditSinkFactory = [function makeSink] threw Error: audit disk full: Password=***. Fix the callback; the original error is the cause.',
      );
      return true;
    });
    const asyncFactory = Fastify();
    addKit(asyncFactory, (opt) => {
      opt.configureAuditTrail();
      opt.auditSinkFactory = (async () => ({ writeAsync: async () => {} })) as never;
    });
    await assert.rejects(
      useKit(asyncFactory),
      (err: Error & { code?: string }) =>
        err.code === 'KIT_ERR_INVALID_OPTION' &&
        /auditSinkFactory .*returned a promise/.test(err.message),
    );
    const missing = Fastify();
    addKit(missing, (opt) => {
      opt.configureAuditTrail();
      opt.auditSinkFactory = (services) => services.resolve('auditStore');
    });
    await assert.rejects(
      useKit(missing),
      (err: Error & { code?: string }) =>
        err.code === 'KIT_ERR_DEPENDENCY' && /auditStore/.test(err.message),
    );
  });

  it('forgetting useKit fails ready() and listen() with KIT_ERR_USE_KIT_MISSING naming the fix, instead of serving 404 everywhere', async () => {
    const app = Fastify();
    addKit(app);
    await assert.rejects(
      async () => void (await app.ready()),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'KIT_ERR_USE_KIT_MISSING');
        assert.match(
          err.message,
          /Call `await useKit\(app\)` after addKit\(app, \.\.\.\) and before app\.ready\(\) or app\.listen\(\)/,
        );
        return true;
      },
    );
    const listening = Fastify();
    addKit(listening);
    await assert.rejects(listening.listen({ port: 0, host: '127.0.0.1' }), {
      code: 'KIT_ERR_USE_KIT_MISSING',
    });
    assert.equal(listening.server.listening, false, 'the server does not listen');
    const { useKit } = await import('@kit/core');
    const notAwaited = Fastify();
    addKit(notAwaited);
    const started = useKit(notAwaited);
    await notAwaited.ready();
    await started;
    await notAwaited.close();
  });
});
