// @test-lines: every - the audit trail: async context, its destination streams and shutdown on this line
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import {
  addKit,
  AUDIT_QUEUE_CAPACITY,
  AuditTrailFormat,
  AuditTrailOptions,
  DEFAULT_REDACT_HEADERS,
  DEFAULT_REDACT_QUERY_PARAMS,
  LoggingAuditSink,
  useKit,
  type AuditTrailOptions as Options,
  type IAuditSink,
  type KitOption,
} from '@kit/core';
import { auditApp, settle } from './audit-helpers.js';

function addWith(configure: (opt: KitOption) => void): void {
  addKit(Fastify(), [], configure);
}

/** The `KIT_ERR_INVALID_OPTION` thrown by addKit for one audit setting, with the option and value named. */
function rejects(set: (a: Options) => void, option: string, shownValue: string): void {
  assert.throws(
    () => addWith((opt) => opt.configureAuditTrail(set)),
    (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_INVALID_OPTION');
      assert.ok(err.message.includes(`auditTrail.${option}`), err.message);
      assert.ok(err.message.includes(shownValue), `${err.message} names ${shownValue}`);
      return true;
    },
  );
}

describe('audit trail options', () => {
  it('is off until configureAuditTrail is called', async () => {
    const h = await auditApp({ off: true });
    try {
      assert.equal(h.app.kit.options.auditTrail, undefined);
      assert.equal(h.app.kit.audit.enabled, false);
      const res = await h.app.inject('/hello');
      assert.equal(res.headers['x-correlation-id'], undefined);
      await settle();
      assert.equal(h.logs.audit().length, 0);
      assert.deepEqual(h.app.kit.audit.stats(), {
        enqueued: 0,
        written: 0,
        dropped: 0,
        failed: 0,
        queueDepth: 0,
      });
      await h.app.kit.audit.flush();
    } finally {
      await h.app.close();
    }
  });

  it('configureAuditTrail() without an action turns it on with every default', async () => {
    const h = await auditApp();
    try {
      const a = h.app.kit.options.auditTrail;
      assert.ok(a);
      assert.ok(Object.isFrozen(a));
      assert.deepEqual(
        { ...a },
        {
          successLogLevel: 'info',
          warningLogLevel: 'warn',
          errorLogLevel: 'error',
          excludePaths: ['/healthz', '/livez', '/openapi.json', '/docs'],
          redactHeaders: [...DEFAULT_REDACT_HEADERS],
          redactQueryParams: [...DEFAULT_REDACT_QUERY_PARAMS],
          includeQueryString: true,
          correlationIdHeader: 'X-Correlation-Id',
          forwardCorrelationId: true,
          asyncWrite: false,
          batchSize: 100,
          flushIntervalMs: 5000,
          ensureFlushOnShutdown: true,
          writeTimeoutMs: 10_000,
          correlationIdContext: true,
          logFormat: AuditTrailFormat.Default,
          fastifyRequestLogging: false,
        },
      );
      for (const name of [
        'Authorization',
        'Proxy-Authorization',
        'Cookie',
        'X-Api-Key',
        'X-Auth-Token',
      ])
        assert.ok(DEFAULT_REDACT_HEADERS.includes(name), name);
      for (const name of [
        'token',
        'access_token',
        'refresh_token',
        'id_token',
        'client_secret',
        'code',
        'jwt',
        'password',
        'authorization',
        'api_key',
        'secret',
      ]) {
        assert.ok(DEFAULT_REDACT_QUERY_PARAMS.includes(name), name);
      }
      assert.ok(
        Object.isFrozen(DEFAULT_REDACT_HEADERS) && Object.isFrozen(DEFAULT_REDACT_QUERY_PARAMS),
        'the exported defaults cannot be changed by accident',
      );
      assert.equal(h.app.kit.audit.enabled, true);
      assert.equal(AUDIT_QUEUE_CAPACITY, 4096);
      const res = await h.app.inject('/hello');
      assert.ok(res.headers['x-correlation-id']);
      await settle();
      assert.equal(h.logs.audit().length, 1);
      assert.deepEqual(h.app.kit.audit.stats(), {
        enqueued: 1,
        written: 1,
        dropped: 0,
        failed: 0,
        queueDepth: 0,
      });
    } finally {
      await h.app.close();
    }
  });

  it('openApiPath/docsPath = false drop out of the default exclude list', () => {
    const app = Fastify();
    addKit(app, [], (opt) => {
      opt.openApiPath = false;
      opt.configureAuditTrail();
    });
    assert.deepEqual([...(app.kit.options.auditTrail?.excludePaths ?? [])], ['/healthz', '/livez']);
  });

  it('the options object is a real AuditTrailOptions the action may mutate', () => {
    let seen: unknown;
    addWith((opt) => opt.configureAuditTrail((a) => (seen = a)));
    assert.ok(seen instanceof AuditTrailOptions);
  });

  it('bad values fail addKit at once with KIT_ERR_INVALID_OPTION naming the option and the value', () => {
    rejects(
      (a) => {
        a.successLogLevel = 'information' as never;
      },
      'successLogLevel',
      '"information"',
    );
    rejects(
      (a) => {
        a.warningLogLevel = 'warning' as never;
      },
      'warningLogLevel',
      '"warning"',
    );
    rejects(
      (a) => {
        a.errorLogLevel = 50 as never;
      },
      'errorLogLevel',
      '50',
    );
    rejects(
      (a) => {
        a.excludePaths = ['healthz'];
      },
      'excludePaths',
      '"healthz"',
    );
    rejects(
      (a) => {
        a.excludePaths = '/healthz' as never;
      },
      'excludePaths',
      '"/healthz"',
    );
    rejects(
      (a) => {
        a.redactHeaders = ['Authorization', ''];
      },
      'redactHeaders',
      '["Authorization",""]',
    );
    rejects(
      (a) => {
        a.redactQueryParams = [42] as never;
      },
      'redactQueryParams',
      '[42]',
    );
    rejects(
      (a) => {
        a.includeQueryString = 'yes' as never;
      },
      'includeQueryString',
      '"yes"',
    );
    rejects(
      (a) => {
        a.correlationIdHeader = 'X Correlation';
      },
      'correlationIdHeader',
      '"X Correlation"',
    );
    rejects(
      (a) => {
        a.correlationIdHeader = 42 as never;
      },
      'correlationIdHeader',
      '42',
    );
    rejects(
      (a) => {
        a.forwardCorrelationId = 1 as never;
      },
      'forwardCorrelationId',
      '1',
    );
    rejects(
      (a) => {
        a.asyncWrite = 'true' as never;
      },
      'asyncWrite',
      '"true"',
    );
    rejects(
      (a) => {
        a.batchSize = 0;
      },
      'batchSize',
      '0',
    );
    rejects(
      (a) => {
        a.batchSize = 1.5;
      },
      'batchSize',
      '1.5',
    );
    rejects(
      (a) => {
        a.batchSize = AUDIT_QUEUE_CAPACITY + 1;
      },
      'batchSize',
      '4097',
    );
    rejects(
      (a) => {
        a.flushIntervalMs = 0;
      },
      'flushIntervalMs',
      '0',
    );
    rejects(
      (a) => {
        a.flushIntervalMs = Number.NaN;
      },
      'flushIntervalMs',
      'NaN',
    );
    rejects(
      (a) => {
        a.ensureFlushOnShutdown = null as never;
      },
      'ensureFlushOnShutdown',
      'null',
    );
    rejects(
      (a) => {
        a.writeTimeoutMs = -1;
      },
      'writeTimeoutMs',
      '-1',
    );
    rejects(
      (a) => {
        a.correlationIdContext = 'no' as never;
      },
      'correlationIdContext',
      '"no"',
    );
    rejects(
      (a) => {
        a.logFormat = 'Pretty' as never;
      },
      'logFormat',
      '"Pretty"',
    );
    rejects(
      (a) => {
        a.fastifyRequestLogging = 'on' as never;
      },
      'fastifyRequestLogging',
      '"on"',
    );
  });

  it('the extremes of the ranges are accepted', () => {
    addWith((opt) =>
      opt.configureAuditTrail((a) => {
        a.batchSize = 1;
        a.flushIntervalMs = 1;
        a.writeTimeoutMs = 1;
      }),
    );
    addWith((opt) =>
      opt.configureAuditTrail((a) => {
        a.batchSize = AUDIT_QUEUE_CAPACITY;
        a.excludePaths = [];
        a.redactHeaders = [];
        a.redactQueryParams = [];
      }),
    );
  });

  it('auditSinkFactory must be a function', () => {
    assert.throws(
      () =>
        addWith((opt) => {
          opt.auditSinkFactory = {} as never;
          opt.configureAuditTrail();
        }),
      { code: 'KIT_ERR_INVALID_OPTION', message: /auditSinkFactory/ },
    );
  });

  it('a factory that returns no IAuditSink fails useKit with KIT_ERR_INVALID_OPTION', async () => {
    const app = Fastify();
    addKit(app, [], (opt) => {
      opt.configureAuditTrail();
      opt.auditSinkFactory = () => ({ write: () => {} }) as never;
    });
    await assert.rejects(useKit(app), {
      code: 'KIT_ERR_INVALID_OPTION',
      message: /auditSinkFactory/,
    });
  });

  it('a factory that resolves a service nobody registered fails useKit with KIT_ERR_DEPENDENCY naming it', async () => {
    const app = Fastify();
    addKit(app, [], (opt) => {
      opt.configureAuditTrail();
      opt.auditSinkFactory = (services) => services.resolve<IAuditSink>('auditStore');
    });
    await assert.rejects(useKit(app), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'KIT_ERR_DEPENDENCY');
      assert.match(err.message, /auditStore/);
      assert.match(err.message, /auditSinkFactory/);
      return true;
    });
  });

  it('LoggingAuditSink refuses a bad logger, format or level', () => {
    const app = Fastify();
    assert.throws(() => new LoggingAuditSink(undefined as never), {
      code: 'KIT_ERR_INVALID_OPTION',
    });
    assert.throws(() => new LoggingAuditSink(app.log, { logFormat: 'Xml' as never }), {
      code: 'KIT_ERR_INVALID_OPTION',
      message: /"Xml"/,
    });
    assert.throws(() => new LoggingAuditSink(app.log, { errorLogLevel: 'critical' as never }), {
      code: 'KIT_ERR_INVALID_OPTION',
      message: /errorLogLevel.*"critical"/,
    });
  });
});
