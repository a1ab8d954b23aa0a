// The values suite on every engine this runtime has, in the time zone the process was started
// with (TZ must be set before Node starts: time-zones.test.ts runs this file in a child process).
// Not a *.test.ts: it only runs that way.
import { describe } from 'node:test';
import { sqliteAvailable } from '../../src/mapper/engines/sqlite/engine.ts';
import { describePostgres } from '@kit/test-support/postgres';
import { pgliteEngine, postgresEngine, sqliteEngine } from '../suite/engines.ts';
import { valuesSuite } from '../suite/values.ts';

describePostgres('PostgreSQL', () => {
  valuesSuite(postgresEngine().engine);
});

describe('PGlite', () => {
  valuesSuite(pgliteEngine());
});

if (sqliteAvailable()) {
  describe('node:sqlite', () => {
    valuesSuite(sqliteEngine('kit-sqlite-tz-'));
  });
}
