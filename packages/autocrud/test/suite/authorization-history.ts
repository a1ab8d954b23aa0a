// Authorization with the change history and the outbox on one engine: a write outside the
// caller's scope is neither written nor recorded (no history row, no outbox record), a caller's
// own writes are recorded once each in both, and GET /{pk}/history takes the row's read rule (a
// row outside the caller's scope, or gone, is a 404; hidden fields never appear in the recorded
// values shown to that caller). Two owners (alice, bob), an admin (root).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { AutoCrud, CrudOperations, defineEntity } from '@kit/autocrud';
import { AUDIENCE, TestAuthority } from '@kit/test-support/jwt-authority';
import { bearer, callerRequests, tablesFingerprint } from './authorization-fixtures.ts';
import { redoclyLint } from '@kit/test-support/redocly';
import { crudApp, type EngineUnderTest } from './fixtures.ts';

const AhBasket = defineEntity({
  name: 'AhBasket',
  table: 'ah_baskets',
  schema: Type.Object({
    id: Type.Integer(),
    ownerId: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
    code: Type.String({ minLength: 1, maxLength: 20 }),
    label: Type.String({ minLength: 1, maxLength: 50 }),
    note: Type.Optional(Type.Union([Type.String({ maxLength: 50 }), Type.Null()])),
    version: Type.Integer(),
  }),
  writable: ['ownerId', 'code', 'label', 'note'],
  version: 'version',
  unique: [['code']],
  columns: { ownerId: 'owner_id' },
  history: true,
});

const AhItem = defineEntity({
  name: 'AhItem',
  table: 'ah_items',
  schema: Type.Object({
    id: Type.Integer(),
    basketId: Type.Integer(),
    ownerId: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
    sku: Type.String({ minLength: 1, maxLength: 20 }),
    version: Type.Integer(),
  }),
  writable: ['basketId', 'ownerId', 'sku'],
  version: 'version',
  columns: { basketId: 'basket_id', ownerId: 'owner_id' },
  references: {
    basketId: { entity: () => AhBasket, onDelete: 'cascade', as: 'basket', many: 'items' },
  },
  history: true,
});

const ALL = CrudOperations.All | CrudOperations.Patch;

@AutoCrud(AhBasket, {
  operations: ALL | CrudOperations.History,
  authorization: {
    rolesClaim: 'realm_access.roles',
    rules: [
      // History beside the read it follows, as a class's operations reused for a rule read.
      { role: 'admin', allow: ALL | CrudOperations.History },
      { role: 'customer', allow: ALL, checks: { ownerId: 'sub' }, hiddenFields: ['note'] },
    ],
  },
})
export class AhBasketsEndpoint {}

@AutoCrud(AhItem, {
  operations: ALL,
  authorization: {
    rolesClaim: 'realm_access.roles',
    rules: [
      { role: 'admin', allow: ALL },
      { role: 'customer', allow: ALL, checks: { ownerId: 'sub' } },
    ],
  },
})
export class AhItemsEndpoint {}

type Json = Record<string, unknown>;
interface Change {
  operation: string;
  changed: string[];
  before: Json | null;
  after: Json | null;
  subject: string | null;
}

export const HISTORY_TABLES = [
  'ah_items',
  'ah_baskets',
  'kit_changes',
  'kit_outbox',
  'kit_outbox_dead',
  'kit_outbox_lease',
];

export function authorizationHistorySuite(engine: EngineUnderTest): void {
  describe(`AutoCrud authorization with the change history and the outbox, ${engine.name}`, () => {
    let authority: TestAuthority;
    let app: FastifyInstance;
    const as: Record<'alice' | 'bob' | 'root' | 'visitor', Record<string, string>> = {
      alice: {},
      bob: {},
      root: {},
      visitor: {},
    };
    const rows: Record<string, number> = {};

    const count = async (table: string, where = '1 = 1') =>
      Number((await engine.sql(`select count(*) as n from ${table} where ${where}`))[0]?.n);
    // The tables, the history and the outbox: what a refused write must leave as it is.
    const fingerprint = tablesFingerprint(
      engine,
      ['ah_baskets', 'ah_items'],
      ['kit_changes', 'kit_outbox'],
    );
    const { send, refusedUnchanged } = callerRequests(() => app, fingerprint);
    const refusedUnrecorded = async (
      caller: Record<string, string>,
      options: InjectOptions,
      status: number,
    ) => {
      const res = await refusedUnchanged(caller, options, status);
      assert.doesNotMatch(res.body, /bob one|n-b/, "another owner's values answered");
    };
    const history = async (
      caller: Record<string, string>,
      id: number,
    ): Promise<LightMyRequestResponse> => send(caller, { url: `/api/ahBaskets/${id}/history` });
    const changesOf = async (entity: string, id: number) =>
      (
        await engine.sql(
          `select operation, subject from kit_changes where entity = '${entity}' and row_key = '${id}' order by id`,
        )
      ).map((r) => [r.operation, r.subject]);

    before(async () => {
      for (const table of HISTORY_TABLES) await engine.sql(`drop table if exists ${table}`);
      authority = await TestAuthority.start();
      // dispatch: false keeps every record in kit_outbox, to be counted.
      app = await crudApp(
        engine,
        { outbox: { dispatch: false } },
        (opt) => opt.configureJwt(authority.url, [AUDIENCE]),
        [AhBasketsEndpoint, AhItemsEndpoint],
      );
      const token = (sub: string, roles: string[]) => bearer(authority, sub, roles);
      Object.assign(as, {
        alice: await token('alice', ['customer']),
        bob: await token('bob', ['customer']),
        root: await token('root', ['admin']),
        visitor: await token('eve', ['visitor']),
      });
      for (const [code, owner] of [
        ['A1', 'alice'],
        ['B1', 'bob'],
      ] as const) {
        const res = await send(as.root, {
          method: 'POST',
          url: '/api/ahBaskets',
          payload: {
            code,
            label: owner === 'bob' ? 'bob one' : 'alice one',
            note: owner === 'bob' ? 'n-b' : 'n-a',
            ownerId: owner,
          },
        });
        assert.equal(res.statusCode, 201, res.body);
        rows[code] = res.json<{ id: number }>().id;
      }
      const item = await send(as.root, {
        method: 'POST',
        url: '/api/ahItems',
        payload: { basketId: rows.B1, sku: 'b-item', ownerId: 'bob' },
      });
      assert.equal(item.statusCode, 201, item.body);
      rows.bobItem = item.json<{ id: number }>().id;
    });
    after(async () => {
      await app?.close();
      await authority?.stop();
      for (const table of HISTORY_TABLES) await engine.sql(`drop table if exists ${table}`);
    });

    it("a write of another owner's row is a 404 (a taken key a 409) and is neither written nor recorded: no history row, no outbox record", async () => {
      const B1 = rows.B1 as number;
      await refusedUnrecorded(
        as.alice,
        {
          method: 'PUT',
          url: `/api/ahBaskets/${B1}`,
          payload: { code: 'B1', label: 'taken over' },
        },
        404,
      );
      await refusedUnrecorded(
        as.alice,
        { method: 'PATCH', url: `/api/ahBaskets/${B1}`, payload: { label: 'taken over' } },
        404,
      );
      await refusedUnrecorded(
        as.alice,
        {
          method: 'PATCH',
          url: `/api/ahBaskets/${B1}`,
          headers: { 'if-match': '"1"' },
          payload: { label: 'taken over' },
        },
        404,
      );
      await refusedUnrecorded(
        as.alice,
        {
          method: 'PATCH',
          url: `/api/ahBaskets/${B1}`,
          headers: { 'if-match': '"7"' },
          payload: { label: 'taken over' },
        },
        404,
      );
      await refusedUnrecorded(as.alice, { method: 'DELETE', url: `/api/ahBaskets/${B1}` }, 404);
      await refusedUnrecorded(
        as.alice,
        { method: 'DELETE', url: `/api/ahBaskets/${B1}`, headers: { 'if-match': '"1"' } },
        404,
      );
      await refusedUnrecorded(
        as.alice,
        {
          method: 'PATCH',
          url: '/api/ahBaskets',
          payload: [
            { id: rows.A1, label: 'mine' },
            { id: B1, label: 'taken over' },
          ],
        },
        404,
      );
      await refusedUnrecorded(
        as.alice,
        { method: 'PATCH', url: '/api/ahItems', payload: [{ id: rows.bobItem, sku: 'stolen' }] },
        404,
      );
      for (const prefer of ['resolution=merge-duplicates', 'resolution=ignore-duplicates']) {
        await refusedUnrecorded(
          as.alice,
          {
            method: 'POST',
            url: '/api/ahBaskets',
            headers: { prefer },
            payload: { code: 'B1', label: 'taken over' },
          },
          409,
        );
        await refusedUnrecorded(
          as.alice,
          {
            method: 'POST',
            url: '/api/ahBaskets',
            headers: { prefer },
            payload: [
              { code: 'A1', label: 'mine' },
              { code: 'B1', label: 'taken over' },
            ],
          },
          409,
        );
      }
      // Writing another owner into a row is refused before anything is read.
      await refusedUnrecorded(
        as.alice,
        {
          method: 'POST',
          url: '/api/ahBaskets',
          payload: { code: 'A9', label: 'nine', ownerId: 'bob' },
        },
        403,
      );
      await refusedUnrecorded(
        as.alice,
        { method: 'PATCH', url: `/api/ahBaskets/${rows.A1}`, payload: { ownerId: 'bob' } },
        403,
      );
      assert.deepEqual(await changesOf('AhBasket', B1), [['create', 'root']]);
    });

    it("the caller's own writes are recorded once each, in the history and the outbox, inside the scope (owner from the claim, the caller as subject)", async () => {
      const before = await fingerprint();
      const created = await send(as.alice, {
        method: 'POST',
        url: '/api/ahBaskets',
        payload: { code: 'A2', label: 'two' },
      });
      assert.equal(created.statusCode, 201, created.body);
      const A2 = created.json<{ id: number }>().id;
      rows.A2 = A2;
      const writes: InjectOptions[] = [
        {
          method: 'PATCH',
          url: `/api/ahBaskets/${A2}`,
          headers: { 'if-match': '"1"' },
          payload: { label: 'two, patched' },
        },
        {
          method: 'PUT',
          url: `/api/ahBaskets/${A2}`,
          payload: { code: 'A2', label: 'two, replaced' },
        },
        {
          method: 'PATCH',
          url: '/api/ahBaskets',
          payload: [
            { id: rows.A1, label: 'one, bulk' },
            { id: A2, label: 'two, bulk' },
          ],
        },
        {
          method: 'POST',
          url: '/api/ahBaskets',
          headers: { prefer: 'resolution=merge-duplicates' },
          payload: [
            { code: 'A1', label: 'one, upserted' },
            { code: 'A3', label: 'three' },
          ],
        },
        {
          method: 'POST',
          url: '/api/ahBaskets',
          payload: { code: 'A4', label: 'four', items: [{ sku: 'x' }, { sku: 'y' }] },
        },
      ];
      for (const write of writes) {
        const res = await send(as.alice, write);
        assert.ok(
          res.statusCode === 200 || res.statusCode === 201,
          `${write.method} ${String(write.url)}: ${res.body}`,
        );
      }
      assert.deepEqual(await changesOf('AhBasket', A2), [
        ['create', 'alice'],
        ['patch', 'alice'],
        ['update', 'alice'],
        ['patch', 'alice'],
      ]);
      assert.deepEqual(await changesOf('AhBasket', rows.A1 as number), [
        ['create', 'root'],
        ['patch', 'alice'],
        ['patch', 'alice'],
      ]);
      // 1 create, patch, put, 2 bulk patches, 2 upserted rows, a nested create of 1 + 2 rows: 10 changes, each in the history and the outbox.
      // counts: ah_baskets, ah_items, kit_changes, kit_outbox.
      const now = await fingerprint();
      assert.equal((now.counts[2] as number) - (before.counts[2] as number), 10);
      assert.equal((now.counts[3] as number) - (before.counts[3] as number), 10);
      assert.equal(await count('ah_baskets', "owner_id = 'alice'"), 4);
      assert.equal(await count('ah_items', "owner_id = 'alice'"), 2);
      const [first] = await engine.sql(
        `select after_values from kit_changes where entity = 'AhBasket' and row_key = '${A2}' and operation = 'create'`,
      );
      const recorded =
        typeof first?.after_values === 'string'
          ? JSON.parse(first.after_values)
          : first?.after_values;
      assert.equal((recorded as Json).ownerId, 'alice');
      assert.equal(await count('kit_outbox', `entity = 'AhItem' and operation = 'create'`), 3);
    });

    it("GET /{pk}/history takes the read rule: another owner's row is a 404, a caller no rule admits a 401/403, hidden fields never appear in what is shown", async () => {
      const B1 = rows.B1 as number;
      const A1 = rows.A1 as number;
      // root changes the note of alice's row: alice sees that change without the note.
      assert.equal(
        (
          await send(as.root, {
            method: 'PATCH',
            url: `/api/ahBaskets/${A1}`,
            payload: { note: 'secret-note' },
          })
        ).statusCode,
        200,
      );
      const other = await history(as.alice, B1);
      assert.equal(other.statusCode, 404, other.body);
      assert.doesNotMatch(other.body, /bob one|n-b|create/);
      assert.equal((await history(as.bob, B1)).statusCode, 200);
      assert.equal((await history({}, B1)).statusCode, 401);
      assert.equal((await history(as.visitor, B1)).statusCode, 403);
      const own = await history(as.alice, A1);
      assert.equal(own.statusCode, 200, own.body);
      const items = own.json<{ items: Change[] }>().items;
      assert.deepEqual(
        items.map((c) => c.operation),
        ['patch', 'patch', 'patch', 'create'],
      );
      assert.doesNotMatch(
        own.body,
        /note|n-a|secret-note/,
        'a hidden field in the history shown to alice',
      );
      for (const change of items)
        for (const values of [change.before, change.after])
          assert.equal(values !== null && 'note' in values, false);
      assert.deepEqual(items[0]?.changed, [], 'the change of a hidden field only lists no field');
      const all = await history(as.root, A1);
      const full = all.json<{ items: Change[] }>().items;
      assert.deepEqual(full[0]?.changed, ['note']);
      assert.equal(full[0]?.after?.note, 'secret-note');
      assert.equal(full.at(-1)?.after?.note, 'n-a');
    });

    it('GET /{pk}/history of a deleted row: a 404 to a scoped caller (the scope cannot be checked), the history to a rule without row checks', async () => {
      const A2 = rows.A2 as number;
      assert.equal(
        (await send(as.alice, { method: 'DELETE', url: `/api/ahBaskets/${A2}` })).statusCode,
        204,
      );
      assert.deepEqual((await changesOf('AhBasket', A2)).at(-1), ['delete', 'alice']);
      assert.equal((await history(as.alice, A2)).statusCode, 404);
      assert.equal((await history(as.bob, A2)).statusCode, 404);
      const root = await history(as.root, A2);
      assert.equal(root.statusCode, 200, root.body);
      assert.deepEqual(
        root.json<{ items: Change[] }>().items.map((c) => c.operation),
        ['delete', 'patch', 'update', 'patch', 'create'],
      );
    });

    it("the document: GET /{pk}/history has the bearer security, 401, 403 and 404 of the row's read", async () => {
      const doc = (await app.inject({ url: '/openapi.json' })).json<{
        paths: Record<
          string,
          Record<string, { security?: unknown[]; responses: Record<string, unknown> }>
        >;
      }>();
      const op = doc.paths['/api/ahBaskets/{id}/history']?.get;
      assert.ok(op, 'GET /api/ahBaskets/{id}/history');
      for (const status of ['200', '400', '401', '403', '404'])
        assert.ok(status in op.responses, `lists ${status}`);
      assert.deepEqual(op.security, [{ bearerAuth: [] }]);
      if (engine.name === 'PGlite') {
        const { ok, output } = await redoclyLint(doc);
        assert.ok(ok, output);
      }
    });
  });
}
