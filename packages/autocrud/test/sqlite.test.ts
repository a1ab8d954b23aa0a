// @test-lines: every - the node:sqlite engine's driver suites: node:sqlite on this line
// The driver suites of the conformance (sqlite-features.test.ts runs the others) on SQLite
// through node:sqlite (Node >= 22.13). On a
// runtime without it, the suites report themselves skipped and the engine's clear start-up error
// is checked instead.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { addKit, useKit } from '@kit/core';
import { addKitAutoCrud } from '@kit/autocrud';
import { sqliteAvailable } from '../src/mapper/engines/sqlite/engine.ts';
import { ProductEndpoint } from './suite/fixtures.ts';
import { driverSuites } from './suite/conformance.ts';
import { sqliteEngine } from './suite/engines.ts';

if (!sqliteAvailable()) {
  const reason = `node:sqlite is not in Node ${process.version} (it is from 22.13 and 23.4)`;
  it('AutoCrud driver suites on node:sqlite', (t) => t.skip(reason));

  describe('the sqlite: engine on a runtime without node:sqlite', () => {
    it('fails addKitAutoCrud at once with KIT_ERR_AUTOCRUD_SQLITE_UNSUPPORTED naming the Node version needed', () => {
      const app = Fastify();
      addKit(app, []);
      assert.throws(
        () => addKitAutoCrud(app, 'sqlite::memory:'),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, 'KIT_ERR_AUTOCRUD_SQLITE_UNSUPPORTED');
          assert.match(err.message, /Node >= 22\.13/);
          assert.ok(err.message.includes(process.version), err.message);
          assert.match(err.message, /'pglite:'/);
          return true;
        },
      );
    });
  });
} else {
  const engine = sqliteEngine();
  driverSuites(engine);
  // The suite's own database file and its directory, for the paths SQLite cannot use.
  const file = String(engine.connection).slice('sqlite:'.length);
  const dir = path.dirname(file);

  describe('a sqlite: path SQLite cannot use fails start-up naming it and what is wrong', () => {
    for (const [label, target, pattern] of [
      ['a directory', dir, /is a directory, not a file/],
      [
        'a file in a missing directory',
        path.join(dir, 'missing', 'shop.db'),
        /the directory .*missing does not exist/,
      ],
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
