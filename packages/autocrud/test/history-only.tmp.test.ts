import { after, before } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { historySuite } from './suite/history.ts';
const pglite = new PGlite();
before(() => pglite.waitReady);
after(() => pglite.close());
historySuite({ name: 'PGlite', flavour: 'postgres', connection: pglite, async sql(text) { const r = await pglite.query<Record<string, unknown>>(text); return r.rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v]))); } });
