// @test-lines: once - Kit's statements and answers on SQLite; sqlite.test.ts checks node:sqlite on every line
// The feature suites of the conformance (suite/conformance.ts says which are which) on SQLite
// through node:sqlite (Node >= 22.13). On a runtime without it they report themselves skipped;
// sqlite.test.ts checks the engine's start-up error there.
import { it } from 'node:test';
import { sqliteAvailable } from '../src/mapper/engines/sqlite/engine.ts';
import { featureSuites } from './suite/conformance.ts';
import { sqliteEngine } from './suite/engines.ts';

if (sqliteAvailable()) featureSuites(sqliteEngine());
else
  it('AutoCrud feature suites on node:sqlite', (t) =>
    t.skip(`node:sqlite is not in Node ${process.version} (it is from 22.13 and 23.4)`));
