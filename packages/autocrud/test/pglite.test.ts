// The conformance and hostile-input suites on PGlite, the embedded default: one instance for the
// whole file (its WASM start-up takes seconds), handed to every app of the file.
import { after, before } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { crudSuite } from './suite/crud.ts';
import type { EngineUnderTest } from './suite/fixtures.ts';
import { cursorSuite } from './suite/cursors.ts';
import { hostileSuite } from './suite/hostile.ts';
import { idempotencySuite } from './suite/idempotency.ts';
import { versionSuite } from './suite/versions.ts';
import { startupSuite } from './suite/startup.ts';
import { valuesSuite } from './suite/values.ts';
import { quietSuite } from './suite/quiet.ts';
import { typesSuite } from './suite/types.ts';
import { patchSuite } from './suite/patch.ts';
import { atomicSuite } from './suite/atomic.ts';
import { bulkSuite } from './suite/bulk.ts';
import { nestedSuite } from './suite/nested.ts';
import { upsertSuite } from './suite/upsert.ts';
import { selectSuite } from './suite/select.ts';
import { relationDefinitionSuite, relationsSuite } from './suite/relations.ts';
import { includesSuite } from './suite/includes.ts';
import { includeValuesSuite } from './suite/include-values.ts';
import { historySuite } from './suite/history.ts';

const pglite = new PGlite();
before(() => pglite.waitReady);
after(() => pglite.close());

const engine: EngineUnderTest = {
  name: 'PGlite',
  flavour: 'postgres',
  connection: pglite,
  async sql(text) {
    const result = await pglite.query<Record<string, unknown>>(text);
    return result.rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v])));
  },
  // PGlite runs one statement at a time, a transaction exclusively: an open one makes Kit's wait.
  async hold() {
    let begun!: () => void;
    let open!: () => void;
    const started = new Promise<void>((resolve) => (begun = resolve));
    const gate = new Promise<void>((resolve) => (open = resolve));
    const done = pglite.transaction(async () => {
      begun();
      await gate;
    });
    await started;
    return async () => {
      open();
      await done;
    };
  },
};

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
includesSuite(engine);
includeValuesSuite(engine);
historySuite(engine);
relationDefinitionSuite();
