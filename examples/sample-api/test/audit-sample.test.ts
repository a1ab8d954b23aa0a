// @test-lines: once - the sample's audit trail through Kit's API over inject
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildApp } from '../src/app.js';

/** A pino destination that keeps the parsed lines. */
function capture(): { lines: Array<Record<string, unknown>>; write(chunk: string): void } {
  const lines: Array<Record<string, unknown>> = [];
  return {
    lines,
    write(chunk: string) {
      for (const text of chunk.split('\n'))
        if (text) lines.push(JSON.parse(text) as Record<string, unknown>);
    },
  };
}

describe('sample service: audit trail', () => {
  it('audits API calls asynchronously with a correlation id, redacts the admin key, and skips the probes', async () => {
    const stream = capture();
    const app = await buildApp({ adminApiKey: 'sample-secret', logger: { level: 'info', stream } });
    try {
      assert.equal(app.kit.audit.enabled, true);
      const users = await app.inject({
        url: '/api/admin/users',
        headers: { 'x-admin-key': 'sample-secret', 'x-correlation-id': 'sample-1' },
      });
      assert.equal(users.statusCode, 200);
      assert.equal(users.headers['x-correlation-id'], 'sample-1');
      const docs = await app.inject('/openapi.json');
      assert.equal(docs.headers['x-correlation-id'], undefined, 'the document is excluded');

      await app.kit.audit.flush();
      const entries = stream.lines.filter((l) => typeof l.Method === 'string');
      assert.equal(entries.length, 1);
      const entry = entries[0] as Record<string, unknown>;
      assert.equal(entry.Path, '/api/admin/users');
      assert.equal(entry.CorrelationId, 'sample-1');
      assert.equal((entry.Headers as Record<string, string>)['x-admin-key'], '***');
      assert.ok(!JSON.stringify(stream.lines).includes('sample-secret'));
    } finally {
      await app.close();
    }
  });
});
