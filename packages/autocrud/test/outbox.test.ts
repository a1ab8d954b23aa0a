// @test-lines: once - the outbox through Kit's API on each engine
// The outbox conformance suite (suite/outbox.ts) on the three engines: PGlite, a real PostgreSQL
// server the test starts, and node:sqlite (Node >= 22.13; skipped, and said so, before).
import { describe, it } from 'node:test';
import { sqliteAvailable } from '../src/mapper/engines/sqlite/engine.ts';
import { describePostgres } from '@kit/test-support/postgres';
import { pgliteEngine, postgresEngine, sqliteEngine } from './suite/engines.ts';
import { outboxSuite } from './suite/outbox.ts';

describe('PGlite', () => {
  outboxSuite(pgliteEngine());
});

describePostgres('PostgreSQL', () => {
  outboxSuite(postgresEngine().engine);
});

if (!sqliteAvailable()) {
  it('AutoCrud outbox on node:sqlite', (t) =>
    t.skip(`node:sqlite is not in Node ${process.version} (it is from 22.13 and 23.4)`));
} else {
  describe('node:sqlite', () => {
    outboxSuite(sqliteEngine('kit-outbox-'));
  });
}
