// @test-lines: once - unique keys through Kit's API on each engine
// Unique keys at definition and in written migrations: defineEntity refuses a key it could not
// match on, and writeMigration declares each key as the same UNIQUE constraint createTables makes
// (the upsert suite checks createTables on PostgreSQL, PGlite and SQLite).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { it } from 'node:test';
import { Type } from '@sinclair/typebox';
import { defineEntity, writeMigration } from '../src/index.ts';
import { sqliteAvailable } from '../src/mapper/engines/sqlite/engine.ts';

const schema = Type.Object({
  id: Type.Integer(),
  sku: Type.String({ maxLength: 20 }),
  vendor: Type.String({ maxLength: 20 }),
  note: Type.String(),
  version: Type.Integer(),
});
const Keyed = defineEntity({
  name: 'Keyed',
  table: 'keyed_items',
  schema,
  writable: ['sku', 'vendor', 'note'],
  version: 'version',
  unique: [['sku'], ['vendor', 'note']],
});

it('defineEntity takes unique keys of writable fields and refuses any other, naming the key', () => {
  assert.deepEqual(Keyed.unique, [['sku'], ['vendor', 'note']]);
  const define = (unique: unknown) => () =>
    defineEntity({
      name: 'Bad',
      table: 'bad',
      schema,
      writable: ['sku', 'vendor'],
      version: 'version',
      unique: unique as never,
    });
  for (const [unique, said] of [
    [[['version']], /unique\[0\] names 'version', which is not a writable field/],
    [[['note']], /unique\[0\] names 'note', which is not a writable field/],
    [[[]], /unique\[0\] must be a non-empty array/],
    [[['sku', 'sku']], /unique\[0\] names a field twice/],
    [[['sku'], ['sku']], /unique\[1\] repeats another unique key/],
    ['sku', /unique must be an array of keys/],
  ] as const) {
    assert.throws(
      define(unique),
      (err: Error & { code?: string }) =>
        err.code === 'KIT_ERR_AUTOCRUD_ENTITY' && said.test(err.message),
    );
  }
});

for (const url of ['pglite:', 'sqlite::memory:']) {
  it(
    `writeMigration declares each unique key as a UNIQUE constraint (${url})`,
    {
      skip:
        url.startsWith('sqlite') && !sqliteAvailable() ? 'node:sqlite is not in this Node' : false,
    },
    async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 'kit-unique-'));
      try {
        const written = await writeMigration({ url, entities: [Keyed], dir, name: 'keyed' });
        assert.ok(written);
        assert.match(written.sql, /constraint "keyed_items_sku_key" unique \("sku"\)/);
        assert.match(
          written.sql,
          /constraint "keyed_items_vendor_note_key" unique \("vendor", "note"\)/,
        );
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
}
