import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import pino from 'pino';
import { createContainer, InjectionMode } from 'awilix';
import { addKit, type KitOption } from '@kit/core';

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
    ['format', o((x) => { (x as { format: string }).format = 'KebabCase'; }), 'format', '"KebabCase"'],
    ['apiPrefix with a space', o((x) => { x.apiPrefix = 'my api'; }), 'apiPrefix', '"my api"'],
    ['apiPrefix with a query', o((x) => { x.apiPrefix = 'api?x=1'; }), 'apiPrefix', '"api?x=1"'],
    ['invalid suffix regex', o((x) => { x.groupNameSuffixPattern = '(Endpoint|'; }), 'groupNameSuffixPattern', '"(Endpoint|"'],
    ['invalid version regex', o((x) => { x.versionFormatPattern = 'V(\\d+'; }), 'versionFormatPattern', '"V(\\\\d+"'],
    ['empty suffix pattern', o((x) => { x.groupNameSuffixPattern = ''; }), 'groupNameSuffixPattern', '""'],
    ['version replacement not a string', o((x) => { (x as { versionFormatReplacement: unknown }).versionFormatReplacement = 5; }), 'versionFormatReplacement', '5'],
    ['relative health path', o((x) => { x.healthCheckPath = 'healthz'; }), 'healthCheckPath', '"healthz"'],
    ['health path with trailing slash', o((x) => { x.healthCheckPath = '/healthz/'; }), 'healthCheckPath', '"/healthz/"'],
    ['health path /livez', o((x) => { x.healthCheckPath = '/livez'; }), 'healthCheckPath', '"/livez"'],
    ['enableHealthChecks not boolean', o((x) => { (x as { enableHealthChecks: unknown }).enableHealthChecks = 'no'; }), 'enableHealthChecks', '"no"'],
    ['detail level', o((x) => { (x as { healthCheckDetailLevel: unknown }).healthCheckDetailLevel = 'Verbose'; }), 'healthCheckDetailLevel', '"Verbose"'],
    ['health path with a wildcard', o((x) => { x.healthCheckPath = '/h*'; }), 'healthCheckPath', '"/h*"'],
    ['health path with a dot-dot segment', o((x) => { x.healthCheckPath = '/a/..'; }), 'healthCheckPath', '"/a/.."'],
    ['health path equal to the document path', o((x) => { x.healthCheckPath = '/openapi.json'; }), 'healthCheckPath', '/openapi.json and /openapi.json'],
    ['health path below the UI path', o((x) => { x.healthCheckPath = '/docs/health'; }), 'healthCheckPath', '/docs/health and /docs'],
    ['apiPrefix with a regex group', o((x) => { x.apiPrefix = 'api(v1)'; }), 'apiPrefix', '"api(v1)"'],
    ['container in CLASSIC mode', o((x) => { x.container = createContainer({ injectionMode: InjectionMode.CLASSIC }); }), 'container', 'CLASSIC'],
    ['openApiPath relative', o((x) => { x.openApiPath = 'openapi.json'; }), 'openApiPath', '"openapi.json"'],
    ['docsPath with space', o((x) => { x.docsPath = '/my docs'; }), 'docsPath', '"/my docs"'],
    ['eagerSingletons not names', o((x) => { (x as { eagerSingletons: unknown }).eagerSingletons = [1]; }), 'eagerSingletons', '[1]'],
    ['warmupTimeoutMs zero', o((x) => { x.warmupTimeoutMs = 0; }), 'warmupTimeoutMs', '0'],
    ['warmupTimeoutMs NaN', o((x) => { x.warmupTimeoutMs = Number.NaN; }), 'warmupTimeoutMs', 'NaN'],
    ['auditSinkFactory not a function', o((x) => { (x as { auditSinkFactory: unknown }).auditSinkFactory = {}; }), 'auditSinkFactory', '{}'],
    ['applicationVersion empty', o((x) => { x.applicationVersion = ''; }), 'applicationVersion', '""'],
    ['batch size 0', o((x) => x.configureAuditTrail((a) => { a.batchSize = 0; })), 'auditTrail.batchSize', '0'],
    ['batch size over capacity', o((x) => x.configureAuditTrail((a) => { a.batchSize = 5000; })), 'auditTrail.batchSize', '5000'],
    ['flush interval negative', o((x) => x.configureAuditTrail((a) => { a.flushIntervalMs = -1; })), 'auditTrail.flushIntervalMs', '-1'],
    ['log level unknown', o((x) => x.configureAuditTrail((a) => { (a as { errorLogLevel: string }).errorLogLevel = 'critical'; })), 'auditTrail.errorLogLevel', '"critical"'],
    ['correlation header with CR/LF', o((x) => x.configureAuditTrail((a) => { a.correlationIdHeader = 'X-Id\r\nEvil: 1'; })), 'auditTrail.correlationIdHeader', '"X-Id\\r\\nEvil: 1"'],
    ['exclude path relative', o((x) => x.configureAuditTrail((a) => { a.excludePaths = ['metrics']; })), 'auditTrail.excludePaths', '"metrics"'],
    ['audit format unknown', o((x) => x.configureAuditTrail((a) => { (a as { logFormat: string }).logFormat = 'Xml'; })), 'auditTrail.logFormat', '"Xml"'],
    ['jwt authority not a URL', o((x) => x.configureJwt('login.example.com', ['api'])), 'configureJwt(authority)', '"login.example.com"'],
    ['jwt authority ftp', o((x) => x.configureJwt('ftp://login.example.com', ['api'])), 'configureJwt(authority)', '"ftp://login.example.com"'],
    ['jwt audiences empty', o((x) => x.configureJwt('https://login.example.com', [])), 'configureJwt(audiences)', '[]'],
    ['shutdown delay negative', o((x) => x.configureGracefulShutdown((g) => { g.shutdownDelayMs = -5; })), 'gracefulShutdown.shutdownDelayMs', '-5'],
    ['shutdown signals empty', o((x) => x.configureGracefulShutdown((g) => { g.signals = []; })), 'gracefulShutdown.signals', '[]'],
    ['warm-up not a function', o((x) => x.configureWarmup('load' as never)), 'configureWarmup(task)', '"load"'],
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
