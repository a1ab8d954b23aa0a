import { DatabaseSync } from 'node:sqlite';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { historySuite } from './suite/history.ts';
const file = path.join(mkdtempSync(path.join(tmpdir(), 'h-')), 'db.sqlite');
const db = new DatabaseSync(file);
historySuite({ name: 'SQLite', flavour: 'sqlite', connection: `sqlite:${file}`, async sql(text) { const s = db.prepare(text); return /^\s*select/i.test(text) ? (s.all() as Array<Record<string, unknown>>) : (s.run(), []); } });
