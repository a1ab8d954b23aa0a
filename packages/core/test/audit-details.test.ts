// @test-lines: every - the audit trail: async context, its destination streams and shutdown on this line
// setAuditDetail: what a plugin adds to a request's audit entry (AuditLogEntry.details). A custom
// sink receives it; the logging sink writes it as `Details` in the structured formats and as
// `details` in JsonStyle; a second call replaces a value; an excluded path, a request without an
// audit trail, and a request that adds nothing have no details.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { AuditTrailFormat, setAuditDetail } from '../src/index.js';
import { auditApp, RecordingSink, settle } from './audit-helpers.js';
import { until } from '@kit/test-support/until';

function routes(app: FastifyInstance): void {
  app.post('/import', async (_request, reply) => {
    setAuditDetail(reply, 'importedRows', 2);
    setAuditDetail(reply, 'importedRows', 3);
    setAuditDetail(reply, 'source', 'csv');
    setAuditDetail(reply, 'dryRun', false);
    return { imported: 3 };
  });
}

describe('setAuditDetail', () => {
  it('a custom sink receives the details the request added, the last value of each name; a request that added none has none', async () => {
    const sink = new RecordingSink();
    const { app } = await auditApp({ routes, kit: (opt) => (opt.auditSinkFactory = () => sink) });
    try {
      assert.equal((await app.inject({ method: 'POST', url: '/import' })).statusCode, 200);
      assert.equal((await app.inject('/hello')).statusCode, 200);
      await app.kit.audit.flush();
      await until('two entries', () => sink.entries.length === 2, 5000);
      const [imported, hello] = sink.entries;
      assert.deepEqual(imported?.details, { importedRows: 3, source: 'csv', dryRun: false });
      assert.equal(hello?.details, undefined);
      assert.ok(!('details' in (hello ?? {})));
    } finally {
      await app.close();
    }
  });

  it('the logging sink writes them: Details in the Default fields, details in JsonStyle', async () => {
    for (const [format, key] of [
      [AuditTrailFormat.Default, 'Details'],
      [AuditTrailFormat.JsonStyle, 'details'],
    ] as const) {
      const { app, logs } = await auditApp({ routes, audit: (a) => (a.logFormat = format) });
      try {
        await app.inject({ method: 'POST', url: '/import' });
        await app.kit.audit.flush();
        await settle();
        const line = logs.audit().find((l) => JSON.stringify(l).includes('/import'));
        assert.ok(line, `${format}: an audit line`);
        const details =
          key === 'Details'
            ? line.Details
            : (JSON.parse(String(line.msg)) as { details?: unknown }).details;
        assert.deepEqual(
          details,
          { importedRows: 3, source: 'csv', dryRun: false },
          `${format}: ${JSON.stringify(line)}`,
        );
      } finally {
        await app.close();
      }
    }
  });

  it('does nothing on an excluded path or without an audit trail', async () => {
    const sink = new RecordingSink();
    const excluded = await auditApp({
      routes,
      audit: (a) => (a.excludePaths = ['/import']),
      kit: (opt) => (opt.auditSinkFactory = () => sink),
    });
    try {
      assert.equal((await excluded.app.inject({ method: 'POST', url: '/import' })).statusCode, 200);
      await excluded.app.kit.audit.flush();
      assert.equal(sink.entries.length, 0);
    } finally {
      await excluded.app.close();
    }
    const off = await auditApp({ routes, off: true });
    try {
      assert.equal((await off.app.inject({ method: 'POST', url: '/import' })).statusCode, 200);
    } finally {
      await off.app.close();
    }
  });
});
