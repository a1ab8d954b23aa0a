// The conformance and hostile-input suites on PGlite, the embedded default: one instance for the
// whole file (its WASM start-up takes seconds), handed to every app of the file.
import { after, before } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { crudSuite } from './suite/crud.ts';
import type { EngineUnderTest } from './suite/fixtures.ts';
import { hostileSuite } from './suite/hostile.ts';
import { startupSuite } from './suite/startup.ts';

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
};

crudSuite(engine);
hostileSuite(engine);
startupSuite(engine);
