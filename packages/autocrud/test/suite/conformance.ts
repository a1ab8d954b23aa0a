// Every engine-conformance suite, in one list: the PostgreSQL, PGlite and SQLite test files each
// run exactly this on their engine, so a new suite joins all three engines at once.
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

/** Registers every conformance suite on `engine`. */
export function conformanceSuites(engine: EngineUnderTest): void {
  crudSuite(engine);
  hostileSuite(engine);
  startupSuite(engine);
  idempotencySuite(engine);
  versionSuite(engine);
  cursorSuite(engine);
  valuesSuite(engine);
  quietSuite(engine);
  typesSuite(engine);
  patchSuite(engine);
  atomicSuite(engine);
  bulkSuite(engine);
  nestedSuite(engine);
  upsertSuite(engine);
  selectSuite(engine);
  relationsSuite(engine);
  scopedReferenceRaceSuite(engine);
  includesSuite(engine);
  includeValuesSuite(engine);
  historySuite(engine);
}
