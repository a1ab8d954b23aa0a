// Every engine-conformance suite, in two lists: the PostgreSQL, PGlite and SQLite test files each
// run exactly these on their engine, so a new suite joins all three engines at once. A new suite
// goes in `driverSuites` when the driver decides its outcome (a codec, an error, a lock, a
// transaction), in `featureSuites` when Kit's statements and answers do.
import { crudSuite } from './crud.ts';
import { cursorSuite } from './cursors.ts';
import { hostileSuite } from './hostile.ts';
import { idempotencySuite } from './idempotency.ts';
import { versionSuite } from './versions.ts';
import { startupSuite } from './startup.ts';
import { valuesSuite } from './values.ts';
import { quietSuite } from './quiet.ts';
import { typesSuite } from './types.ts';
import { patchSuite } from './patch.ts';
import { atomicSuite } from './atomic.ts';
import { bulkSuite } from './bulk.ts';
import { nestedSuite } from './nested.ts';
import { upsertSuite } from './upsert.ts';
import { selectSuite } from './select.ts';
import { relationsSuite } from './relations.ts';
import { scopedReferenceRaceSuite } from './scoped-references.ts';
import { includesSuite } from './includes.ts';
import { includeValuesSuite } from './include-values.ts';
import { historySuite } from './history.ts';
import type { EngineUnderTest } from './fixtures.ts';

/**
 * The suites whose outcome rests on the engine's driver as this Node line runs it: connecting and
 * start-up, every value and column type through its codecs, its errors under hostile input and
 * quiet logs, transactions and their rollback, the parameter limit of a statement. Each engine's
 * test file runs these on every line CI tests.
 */
export function driverSuites(engine: EngineUnderTest): void {
  hostileSuite(engine);
  startupSuite(engine);
  valuesSuite(engine);
  quietSuite(engine);
  typesSuite(engine);
  atomicSuite(engine);
  bulkSuite(engine);
}

/**
 * The suites of Kit's own statements and answers over a driver the suites above have checked:
 * reads and writes, versions, cursors, PATCH, nested creates, `fields=` and filters, relations and
 * includes, and what the database server decides between sessions (unique keys and upserts,
 * idempotent creates, references racing a change of scope, the history's rows in the write's
 * transaction). What they show does not change with the Node line, so each engine's `-features`
 * test file runs them once per CI run.
 */
export function featureSuites(engine: EngineUnderTest): void {
  crudSuite(engine);
  idempotencySuite(engine);
  upsertSuite(engine);
  scopedReferenceRaceSuite(engine);
  historySuite(engine);
  versionSuite(engine);
  cursorSuite(engine);
  patchSuite(engine);
  nestedSuite(engine);
  selectSuite(engine);
  relationsSuite(engine);
  includesSuite(engine);
  includeValuesSuite(engine);
}
