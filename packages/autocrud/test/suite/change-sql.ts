// A single write's change rows written by SQL (the sinks' SQL forms, composed into the write's one
// statement on PostgreSQL and PGlite) hold exactly what the JavaScript sinks write: the same writes
// on two tables of the same shape, one recorded in one statement, the other (a host's JavaScript
// sink beside Kit's) through the write's transaction, give identical history rows and identical
// outbox payloads, byte for byte, with values of every kind.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, useKit } from '@kit/core';
import {
  addKitAutoCrud,
  AutoCrud,
  defineEntity,
  type EntityRepository,
  type KitAutoCrud,
} from '@kit/autocrud';
import type { EngineUnderTest } from './fixtures.ts';

function kinds(name: string, table: string, soft: boolean) {
  return defineEntity({
    name,
    table,
    schema: Type.Object({
      id: Type.Integer(),
      count: Type.Integer(),
      amount: Type.Number(),
      flag: Type.Boolean(),
      label: Type.String(),
      ref: Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
      at: Type.String({ format: 'date-time' }),
      day: Type.Optional(Type.Union([Type.String({ format: 'date' }), Type.Null()])),
      price: Type.String({ format: 'decimal' }),
      big: Type.String({ format: 'int64' }),
      doc: Type.Optional(Type.Object({}, { additionalProperties: true })),
      note: Type.Optional(Type.String()),
      secret: Type.Optional(Type.Union([Type.String(), Type.Null()])),
      version: Type.Integer(),
      updatedAt: Type.String({ format: 'date-time' }),
      ...(soft ? { gone: Type.Boolean() } : {}),
    }),
    writable: [
      'count',
      'amount',
      'flag',
      'label',
      'ref',
      'at',
      'day',
      'price',
      'big',
      'doc',
      'note',
      'secret',
    ],
    version: 'version',
    updatedAt: 'updatedAt',
    ...(soft ? { softDelete: 'gone' } : {}),
    columns: { updatedAt: 'updated_at' },
    history: true,
    redact: ['secret'],
  });
}

// The same shapes twice: `Sql*` recorded in one statement, `Js*` through a transaction (a host sink).
const SqlSoft = kinds('SqlSoft', 'csql_soft', true);
const JsSoft = kinds('JsSoft', 'cjs_soft', true);
export const SqlHard = kinds('SqlHard', 'csql_hard', false);
const JsHard = kinds('JsHard', 'cjs_hard', false);

@AutoCrud(SqlSoft)
class SqlSoftEndpoint {}
@AutoCrud(JsSoft)
class JsSoftEndpoint {}
@AutoCrud(SqlHard)
export class SqlHardEndpoint {}
@AutoCrud(JsHard)
class JsHardEndpoint {}

type Repo = EntityRepository;

/** A row's text with Kit's stamp (written at another moment on each table) replaced, once it is seen to be in Kit's form. */
function unstamped(value: unknown): unknown {
  return typeof value === 'string'
    ? value.replace(
        /"updatedAt": ?"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z"/g,
        '"updatedAt":"<stamp>"',
      )
    : value;
}

const FIRST = {
  count: 42,
  amount: 0.1 + 0.2,
  flag: true,
  label: 'tab\tquote" back\\ nl\n ctl\u0001 é ✓ 𝄞',
  ref: '0b6b8a1e-7c39-4c7e-9d3a-8f1b2c3d4e5f',
  at: '2024-02-29T23:59:59.123456Z',
  day: '2024-02-29',
  price: '12345678901234567.8901',
  big: '9223372036854775807',
  doc: {
    zeta: 1,
    a: { nested: [1, 'two', { b: null, aa: false }] },
    'key with: spaces, and commas': 'x: y, z',
    n: 1.5,
  },
  secret: 'hunter2',
};

/** The writes, on one entity of each pair: every operation, values of every kind, nulls and absent values. */
async function writeAll(
  soft: Repo,
  hard: Repo,
  context: { correlationId: string; subject: string },
): Promise<void> {
  const ctx = { changeContext: { ...context, traceId: '4bf92f3577b34da6a3ce929d0e0e4736' } };
  const a = (await soft.create(FIRST, ctx)) as { id: number };
  await soft.patch(a.id, { amount: 1e21, note: 'now', day: null, secret: 'other' }, ctx);
  await soft.patch(
    a.id,
    {
      amount: 1.5e-7,
      count: 9007199254740991,
      big: '-9223372036854775808',
      doc: { b: [], a: 'x' },
    },
    ctx,
  );
  await soft.update(
    a.id,
    {
      count: 1,
      amount: -0,
      flag: false,
      label: '',
      ref: null,
      at: '0001-01-01T00:00:00.000001Z',
      price: '0.0000',
      big: '0',
    },
    { ...ctx, ifVersion: [3] },
  );
  await soft.patch(a.id, { amount: 123456789012345680000, label: 'x', note: 'back' }, ctx);
  await soft.delete(a.id, ctx);
  const b = (await soft.create(
    {
      count: 0,
      amount: 1e-6,
      flag: false,
      label: 'b',
      ref: null,
      at: '2030-06-15T12:00:00.000000Z',
      price: '-1.5',
      big: '1',
      secret: null,
    },
    { changeContext: {} },
  )) as { id: number };
  await soft.patch(b.id, { doc: { one: 1 } }, { changeContext: { subject: 's'.repeat(300) } });
  const h = (await hard.create({ ...FIRST, note: 'n' }, ctx)) as { id: number };
  await hard.patch(h.id, { label: 'changed', secret: 'changed too' }, ctx);
  await hard.delete(h.id, ctx);
}

export function changeSqlSuite(engine: EngineUnderTest): void {
  describe(
    `AutoCrud change rows written by SQL on ${engine.name}`,
    {
      skip:
        engine.flavour !== 'postgres' && 'the one-statement write is PostgreSQL and PGlite only',
    },
    () => {
      let app: FastifyInstance | undefined;
      let crud: KitAutoCrud;

      before(async () => {
        for (const table of [
          'csql_soft',
          'cjs_soft',
          'csql_hard',
          'cjs_hard',
          'kit_changes',
          'kit_outbox',
          'kit_outbox_dead',
          'kit_outbox_lease',
        ])
          await engine.sql(`drop table if exists ${table}`);
        const made = Fastify();
        addKit(made, [SqlSoftEndpoint, JsSoftEndpoint, SqlHardEndpoint, JsHardEndpoint]);
        crud = addKitAutoCrud(made, engine.connection, {
          createTables: true,
          outbox: { dispatch: false },
        });
        await useKit(made);
        await made.ready();
        app = made;
        // A host's JavaScript sink: the Js tables' writes keep their transaction and the JavaScript sinks.
        const host = async (): Promise<void> => {};
        crud.repository(JsSoft).addChangeSink(host);
        crud.repository(JsHard).addChangeSink(host);
      });
      after(async () => {
        await app?.close();
      });

      it('history rows and outbox payloads are identical through the one statement and through the JavaScript sinks, every kind of value', async () => {
        const context = { correlationId: 'c0ffee', subject: 'user-7' };
        await writeAll(crud.repository(SqlSoft), crud.repository(SqlHard), context);
        await writeAll(crud.repository(JsSoft), crud.repository(JsHard), context);
        const history = async (entity: string) =>
          (
            await engine.sql(
              `select row_key, operation, version_before, version_after, changed::text as changed, before_values::text as before, after_values::text as after, correlation_id, subject, trace_id, changed_at is not null as stamped from kit_changes where entity = '${entity}' order by id`,
            )
          ).map((r) => ({
            ...r,
            before: unstamped(r.before),
            after: unstamped(r.after),
            version_before: r.version_before === null ? null : Number(r.version_before),
            version_after: r.version_after === null ? null : Number(r.version_after),
          }));
        const outbox = async (entity: string) =>
          (
            await engine.sql(
              `select id, row_key, operation, version_before, version_after, payload, correlation_id, subject, trace_id from kit_outbox where entity = '${entity}' order by seq`,
            )
          ).map(({ id, ...r }) => ({
            ...r,
            payload: unstamped(r.payload),
            uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(
              String(id),
            ),
            version_before: r.version_before === null ? null : Number(r.version_before),
            version_after: r.version_after === null ? null : Number(r.version_after),
          }));
        for (const [sqlName, jsName, writes] of [
          ['SqlSoft', 'JsSoft', 8],
          ['SqlHard', 'JsHard', 3],
        ] as const) {
          const [bySql, byJs] = [await history(sqlName), await history(jsName)];
          assert.equal(byJs.length, writes);
          assert.deepEqual(bySql, byJs, `${sqlName}: history rows`);
          const [outSql, outJs] = [await outbox(sqlName), await outbox(jsName)];
          assert.equal(outJs.length, writes);
          assert.deepEqual(outSql, outJs, `${sqlName}: outbox records`);
          for (const r of outSql) assert.equal(r.uuid, true);
        }
        // The redacted field is named, never with its value.
        const all = JSON.stringify([
          await history('SqlSoft'),
          await outbox('SqlSoft'),
          await history('SqlHard'),
          await outbox('SqlHard'),
        ]);
        for (const secret of ['hunter2', 'other', 'changed too'])
          assert.equal(all.includes(secret), false, secret);
      });

      it("concurrent single writes of one row: each change row's before is the row the previous write left (the locked kit_old reads the newest committed row)", async () => {
        const repo = crud.repository(SqlHard);
        const row = (await repo.create({ ...FIRST, count: 0 })) as { id: number };
        const writers = 24;
        await Promise.all(
          Array.from({ length: writers }, (_, i) =>
            repo.patch(row.id, { count: i + 1, label: `w${i}` }),
          ),
        );
        const changes = (
          await engine.sql(
            `select version_before, version_after, before_values::text as b, after_values::text as a from kit_changes where entity = 'SqlHard' and row_key = '${row.id}' and operation = 'patch' order by id`,
          )
        ).map((r) => ({
          from: Number(r.version_before),
          to: Number(r.version_after),
          before: JSON.parse(String(r.b)) as { count: number },
          after: JSON.parse(String(r.a)) as { count: number },
        }));
        assert.equal(changes.length, writers);
        changes.forEach((c, i) => {
          assert.deepEqual([c.from, c.to], [i + 1, i + 2]);
          if (i > 0)
            assert.equal(
              c.before.count,
              (changes[i - 1] as { after: { count: number } }).after.count,
              `change ${i}`,
            );
        });
        assert.equal(changes[0]?.before.count, 0);
      });

      it('a single write of a table whose sinks all have an SQL form is one statement; the audit count is reported', async () => {
        const seen: number[] = [];
        const row = (await crud
          .repository(SqlHard)
          .create(FIRST, { changeContext: { committed: (n) => seen.push(n) } })) as { id: number };
        await crud
          .repository(SqlHard)
          .patch(row.id, { count: 2 }, { changeContext: { committed: (n) => seen.push(n) } });
        // Nothing changed and a version refused: nothing recorded, nothing counted.
        await assert.rejects(
          crud
            .repository(SqlHard)
            .patch(
              row.id,
              { count: 3 },
              { ifVersion: [1], changeContext: { committed: (n) => seen.push(n) } },
            ),
          { name: 'VersionConflictError', currentVersion: 2 },
        );
        assert.equal(
          await crud
            .repository(SqlHard)
            .delete(row.id + 1000, { changeContext: { committed: (n) => seen.push(n) } }),
          false,
        );
        assert.deepEqual(seen, [1, 1]);
        const [count] = await engine.sql(
          `select count(*)::int as n from kit_changes where entity = 'SqlHard' and row_key = '${row.id}'`,
        );
        assert.equal(Number(count?.n), 2);
      });
    },
  );
}
