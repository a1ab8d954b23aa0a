// The conformance and hostile-input suites on SQLite through node:sqlite (Node >= 22.13). On a
// runtime without it, the suites report themselves skipped and the engine's clear start-up error
// is checked instead.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import Fastify from 'fastify';
import { addKit, useKit } from '@kit/core';
import { addKitAutoCrud } from '@kit/autocrud';
import { sqliteAvailable } from '../src/mapper/sqlite.ts';
import { crudSuite } from './suite/crud.ts';
import type { EngineUnderTest } from './suite/fixtures.ts';
import { cursorSuite } from './suite/cursors.ts';
import { ProductEndpoint } from './suite/fixtures.ts';
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
import { relationsSuite } from './suite/relations.ts';
import { includesSuite } from './suite/includes.ts';
import { includeValuesSuite } from './suite/include-values.ts';
import { historySuite } from './suite/history.ts';

interface DatabaseSync {
  prepare(sql: string): { all(): Array<Record<string, unknown>>; run(): unknown };
  exec(sql: string): void;
  close(): void;
}

if (!sqliteAvailable()) {
  const reason = `node:sqlite is not in Node ${process.version} (it is from 22.13 and 23.4)`;
  it('AutoCrud conformance on node:sqlite', (t) => t.skip(reason));
  it('AutoCrud hostile input on node:sqlite', (t) => t.skip(reason));
  it('AutoCrud idempotent creates, versions and cursors on node:sqlite', (t) => t.skip(reason));
  it('AutoCrud values, cursors and answers on node:sqlite', (t) => t.skip(reason));
  it('AutoCrud client errors on node:sqlite', (t) => t.skip(reason));
  it('AutoCrud PATCH on node:sqlite', (t) => t.skip(reason));
  it('AutoCrud fields=, ilike and OR groups on node:sqlite', (t) => t.skip(reason));
  it('AutoCrud relations on node:sqlite', (t) => t.skip(reason));
  it('AutoCrud includes and nested routes on node:sqlite', (t) => t.skip(reason));

  describe('the sqlite: engine on a runtime without node:sqlite', () => {
    it('fails addKitAutoCrud at once with KIT_ERR_AUTOCRUD_SQLITE_UNSUPPORTED naming the Node version needed', () => {
      const app = Fastify();
      addKit(app, []);
      assert.throws(() => addKitAutoCrud(app, 'sqlite::memory:'), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'KIT_ERR_AUTOCRUD_SQLITE_UNSUPPORTED');
        assert.match(err.message, /Node >= 22\.13/);
        assert.ok(err.message.includes(process.version), err.message);
        assert.match(err.message, /'pglite:'/);
        return true;
      });
    });
  });
} else {
  const dir = mkdtempSync(path.join(tmpdir(), 'kit-sqlite-'));
  const file = path.join(dir, 'suite.db');
  const { DatabaseSync } = process.getBuiltinModule('node:sqlite') as { DatabaseSync: new (file: string) => DatabaseSync };
  const direct = new DatabaseSync(file);
  after(() => {
    direct.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const engine: EngineUnderTest = {
    name: 'node:sqlite',
    flavour: 'sqlite',
    connection: `sqlite:${file}`,
    async sql(text) {
      const stmt = direct.prepare(text);
      if (/^\s*select/i.test(text)) return stmt.all();
      stmt.run();
      return [];
    },
    // Another connection's write lock: Kit's writes wait for it on timers, the event loop serving meanwhile.
    async hold() {
      direct.exec('begin immediate');
      return async () => direct.exec('commit');
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

  describe('a sqlite: path SQLite cannot use fails start-up naming it and what is wrong', () => {
    for (const [label, target, pattern] of [
      ['a directory', dir, /is a directory, not a file/],
      ['a file in a missing directory', path.join(dir, 'missing', 'shop.db'), /the directory .*missing does not exist/],
      ['a path under a regular file', path.join(file, 'shop.db'), /is a file, not a directory/],
    ] as const) {
      it(label, async () => {
        const app = Fastify();
        addKit(app, [ProductEndpoint]);
        addKitAutoCrud(app, `sqlite:${target}`);
        await assert.rejects(useKit(app), (err: Error & { code?: string }) => {
          assert.equal(err.code, 'KIT_ERR_AUTOCRUD_ENGINE', err.message);
          assert.ok(err.message.includes(`sqlite:${target}`), err.message);
          assert.match(err.message, pattern);
          return true;
        });
        await app.close();
      });
    }
  });
}
