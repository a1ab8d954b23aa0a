// Authorization on the routes of relations and atomic writes, on one engine: bulk create, upsert,
// bulk PATCH, nested create, includes and the nested list route, each under the rules of its own
// entity. Two owners (alice, bob) and an admin (root). The OWASP API1/API3 cases: another owner's
// id in the path, in a bulk body, in a nested child, in an include; a hidden field of an included
// or nested-listed entity in fields=, sort=, filter[...]; a body naming another owner. Every refused
// attempt is shown to change nothing: both tables' rows, hashed, before and after.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { AutoCrud, CrudOperations, defineEntity } from '@kit/autocrud';
import { AUDIENCE, TestAuthority } from '@kit/test-support/jwt-authority';
import { bearer, callerRequests, tablesFingerprint } from './authorization-fixtures.ts';
import { assertBadParameter, crudApp, type EngineUnderTest } from './fixtures.ts';

export const AuthBasket = defineEntity({
  name: 'AuthBasket',
  table: 'authz_baskets',
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
});

export const AuthItem = defineEntity({
  name: 'AuthItem',
  table: 'authz_items',
  schema: Type.Object({
    id: Type.Integer(),
    basketId: Type.Integer(),
    ownerId: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
    sku: Type.String({ minLength: 1, maxLength: 20 }),
    price: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
    // A second reference to a basket, which a nested create's children set themselves (basketId is the new parent's).
    fromBasketId: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
    version: Type.Integer(),
  }),
  writable: ['basketId', 'ownerId', 'sku', 'price', 'fromBasketId'],
  version: 'version',
  unique: [['sku']],
  columns: { basketId: 'basket_id', ownerId: 'owner_id', fromBasketId: 'from_basket_id' },
  references: {
    basketId: { entity: () => AuthBasket, onDelete: 'cascade', as: 'basket', many: 'items' },
    fromBasketId: {
      entity: () => AuthBasket,
      onDelete: 'set null',
      as: 'fromBasket',
      many: 'giftedItems',
    },
  },
});

const ALL = CrudOperations.All | CrudOperations.Patch;

@AutoCrud(AuthBasket, {
  operations: ALL,
  authorization: {
    rolesClaim: 'realm_access.roles',
    rules: [
      { role: 'admin', allow: ALL },
      { role: 'customer', allow: ALL, checks: { ownerId: 'sub' }, hiddenFields: ['note'] },
    ],
  },
})
export class AuthBasketsEndpoint {}

@AutoCrud(AuthItem, {
  operations: ALL,
  authorization: {
    rolesClaim: 'realm_access.roles',
    rules: [
      { role: 'admin', allow: ALL },
      { role: 'customer', allow: ALL, checks: { ownerId: 'sub' }, hiddenFields: ['price'] },
    ],
  },
})
export class AuthItemsEndpoint {}

type Json = Record<string, unknown>;
type Page = { items: Json[]; total: number };

/** The suite's identities, as request headers. */
export interface RelationCallers {
  alice: Record<string, string>;
  bob: Record<string, string>;
  root: Record<string, string>;
}

/** The app of the suite, its callers, and the rows root made: baskets A1 (alice) and B1 (bob), and items in both, some in the other owner's basket. */
export async function relationsFixture(
  engine: EngineUnderTest,
  authority: TestAuthority,
  server: Parameters<typeof crudApp>[4] = {},
) {
  await engine.sql('drop table if exists authz_items');
  await engine.sql('drop table if exists authz_baskets');
  const app = await crudApp(
    engine,
    {},
    (opt) => opt.configureJwt(authority.url, [AUDIENCE]),
    [AuthBasketsEndpoint, AuthItemsEndpoint],
    server,
  );
  const token = (sub: string, roles: string[]) => bearer(authority, sub, roles);
  const as: RelationCallers = {
    alice: await token('alice', ['customer']),
    bob: await token('bob', ['customer']),
    root: await token('root', ['admin']),
  };
  const make = async (url: string, payload: Json): Promise<number> => {
    const res = await app.inject({ method: 'POST', url, headers: as.root, payload });
    assert.equal(res.statusCode, 201, res.body);
    return res.json<{ id: number }>().id;
  };
  const baskets = {
    A1: await make('/api/authBaskets', {
      code: 'A1',
      label: 'alice one',
      note: 'n-a',
      ownerId: 'alice',
    }),
    B1: await make('/api/authBaskets', {
      code: 'B1',
      label: 'bob one',
      note: 'n-b',
      ownerId: 'bob',
    }),
  };
  const items = {
    aliceInA1: await make('/api/authItems', {
      basketId: baskets.A1,
      sku: 'a-in-a1',
      price: 5,
      ownerId: 'alice',
    }),
    bobInA1: await make('/api/authItems', {
      basketId: baskets.A1,
      sku: 'b-in-a1',
      price: 6,
      ownerId: 'bob',
    }),
    bobInB1: await make('/api/authItems', {
      basketId: baskets.B1,
      sku: 'b-in-b1',
      price: 7,
      ownerId: 'bob',
    }),
    aliceInB1: await make('/api/authItems', {
      basketId: baskets.B1,
      sku: 'a-in-b1',
      price: 8,
      ownerId: 'alice',
    }),
  };
  return { app, as, baskets, items };
}

export function authorizationRelationsSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud authorization on relations and atomic writes, ${engine.name}`, () => {
    let authority: TestAuthority;
    let app: FastifyInstance;
    let as: RelationCallers;
    let baskets: { A1: number; B1: number };
    let items: { aliceInA1: number; bobInA1: number; bobInB1: number; aliceInB1: number };

    const fingerprint = tablesFingerprint(engine, ['authz_baskets', 'authz_items']);
    const { send, refusedUnchanged } = callerRequests(() => app, fingerprint);
    const ownerOf = async (table: string, where: string) =>
      (await engine.sql(`select owner_id from ${table} where ${where}`)).map((r) => r.owner_id);

    before(async () => {
      authority = await TestAuthority.start();
      ({ app, as, baskets, items } = await relationsFixture(engine, authority));
    });
    after(async () => {
      await app?.close();
      await authority?.stop();
      await engine.sql('drop table if exists authz_items');
      await engine.sql('drop table if exists authz_baskets');
    });

    it("bulk create: a row naming another owner is a 403 naming it, nothing written; every row of an accepted batch is the caller's", async () => {
      const refused = await refusedUnchanged(
        as.alice,
        {
          method: 'POST',
          url: '/api/authBaskets',
          payload: [
            { code: 'A2', label: 'two' },
            { code: 'A3', label: 'three', ownerId: 'bob' },
          ],
        },
        403,
      );
      assert.match(refused.json<{ detail: string }>().detail, /Row \[1\].*ownerId/);
      const hidden = await refusedUnchanged(
        as.alice,
        {
          method: 'POST',
          url: '/api/authBaskets',
          payload: [{ code: 'A2', label: 'two', note: 'mine' }],
        },
        403,
      );
      assert.match(hidden.json<{ detail: string }>().detail, /note/);
      const res = await send(as.alice, {
        method: 'POST',
        url: '/api/authBaskets',
        payload: [
          { code: 'A2', label: 'two' },
          { code: 'A3', label: 'three', ownerId: 'alice' },
        ],
      });
      assert.equal(res.statusCode, 201, res.body);
      const rows = res.json<Json[]>();
      assert.deepEqual(
        rows.map((r) => r.ownerId),
        ['alice', 'alice'],
      );
      for (const row of rows) assert.equal('note' in row, false, 'a hidden field answered');
      assert.deepEqual(await ownerOf('authz_baskets', "code in ('A2', 'A3')"), ['alice', 'alice']);
    });

    it("upsert: a key held by another owner's row is a 409 as a create of that key is, and that row is neither overwritten nor answered", async () => {
      for (const prefer of ['resolution=merge-duplicates', 'resolution=ignore-duplicates']) {
        const single = await refusedUnchanged(
          as.alice,
          {
            method: 'POST',
            url: '/api/authBaskets',
            headers: { prefer },
            payload: { code: 'B1', label: 'taken over' },
          },
          409,
        );
        assert.doesNotMatch(single.body, /bob/);
        const many = await refusedUnchanged(
          as.alice,
          {
            method: 'POST',
            url: '/api/authBaskets',
            headers: { prefer },
            payload: [
              { code: 'A1', label: 'mine' },
              { code: 'B1', label: 'taken over' },
            ],
          },
          409,
        );
        assert.match(many.body, /\[1\]/);
        assert.doesNotMatch(many.body, /bob/);
      }
      await refusedUnchanged(
        as.alice,
        {
          method: 'POST',
          url: '/api/authBaskets',
          headers: { prefer: 'resolution=merge-duplicates' },
          payload: { code: 'A9', label: 'nine', ownerId: 'bob' },
        },
        403,
      );
      const own = await send(as.alice, {
        method: 'POST',
        url: '/api/authBaskets',
        headers: { prefer: 'resolution=merge-duplicates' },
        payload: [
          { code: 'A1', label: 'alice one, merged' },
          { code: 'A8', label: 'eight' },
        ],
      });
      assert.equal(own.statusCode, 200, own.body);
      assert.equal(own.headers['kit-row-outcomes'], 'updated, created');
      assert.deepEqual(
        own.json<Json[]>().map((r) => [r.code, r.ownerId, 'note' in r]),
        [
          ['A1', 'alice', false],
          ['A8', 'alice', false],
        ],
      );
      assert.deepEqual(await ownerOf('authz_baskets', "code = 'B1'"), ['bob']);
      assert.deepEqual(
        (await engine.sql("select label from authz_baskets where code = 'B1'")).map((r) => r.label),
        ['bob one'],
      );
    });

    it("bulk PATCH: another owner's row fails the whole batch as a 404 naming it (at any version: never a 412), nothing written", async () => {
      const res = await refusedUnchanged(
        as.alice,
        {
          method: 'PATCH',
          url: '/api/authBaskets',
          payload: [
            { id: baskets.A1, label: 'x' },
            { id: baskets.B1, label: 'y' },
          ],
        },
        404,
      );
      assert.match(res.json<{ detail: string }>().detail, /\[1\]/);
      await refusedUnchanged(
        as.alice,
        {
          method: 'PATCH',
          url: '/api/authBaskets',
          payload: [{ id: baskets.B1, label: 'y', version: 99 }],
        },
        404,
      );
      await refusedUnchanged(
        as.alice,
        { method: 'PATCH', url: '/api/authBaskets', payload: [{ id: baskets.A1, ownerId: 'bob' }] },
        403,
      );
      await refusedUnchanged(
        as.alice,
        { method: 'PATCH', url: '/api/authItems', payload: [{ id: items.bobInA1, sku: 'stolen' }] },
        404,
      );
      const ok = await send(as.alice, {
        method: 'PATCH',
        url: '/api/authItems',
        payload: [
          { id: items.aliceInA1, sku: 'a-in-a1!' },
          { id: items.aliceInB1, sku: 'a-in-b1!' },
        ],
      });
      assert.equal(ok.statusCode, 200, ok.body);
      for (const row of ok.json<Json[]>()) assert.equal('price' in row, false);
    });

    it("nested create: children are created under their own entity's rules (owner from the claim, a child naming another owner is a 403 naming it), nothing written on a refusal", async () => {
      const refused = await refusedUnchanged(
        as.alice,
        {
          method: 'POST',
          url: '/api/authBaskets',
          payload: {
            code: 'A4',
            label: 'four',
            items: [{ sku: 's1' }, { sku: 's2', ownerId: 'bob' }],
          },
        },
        403,
      );
      assert.match(refused.json<{ detail: string }>().detail, /items\[1\]/);
      await refusedUnchanged(
        as.alice,
        {
          method: 'POST',
          url: '/api/authBaskets',
          payload: { code: 'A4', label: 'four', items: [{ sku: 's1', price: 1 }] },
        },
        403,
      );
      await refusedUnchanged(
        as.alice,
        {
          method: 'POST',
          url: '/api/authBaskets',
          payload: { code: 'A4', label: 'four', ownerId: 'bob', items: [{ sku: 's1' }] },
        },
        403,
      );
      const res = await send(as.alice, {
        method: 'POST',
        url: '/api/authBaskets',
        payload: {
          code: 'A4',
          label: 'four',
          items: [{ sku: 's1' }, { sku: 's2', ownerId: 'alice' }],
        },
      });
      assert.equal(res.statusCode, 201, res.body);
      const tree = res.json<Json & { items: Json[] }>();
      assert.equal(tree.ownerId, 'alice');
      assert.equal('note' in tree, false);
      assert.deepEqual(
        tree.items.map((i) => [i.ownerId, 'price' in i]),
        [
          ['alice', false],
          ['alice', false],
        ],
      );
      assert.deepEqual(await ownerOf('authz_items', `basket_id = ${Number(tree.id)}`), [
        'alice',
        'alice',
      ]);
    });

    it("a reference to another owner's row is refused as one to a missing row (422 naming the field, the answer a key that does not exist gets: no existence oracle), nothing written", async () => {
      const missing = 999_999;
      const detailOf = (res: LightMyRequestResponse, key: number) =>
        res.json<{ detail: string }>().detail.replace(String(key), '<key>');
      // Alice's own item, which the merging upsert below would write over.
      const mine = await send(as.alice, {
        method: 'POST',
        url: '/api/authItems',
        payload: { basketId: baskets.A1, sku: 'ref-mine' },
      });
      assert.equal(mine.statusCode, 201, mine.body);
      const cases: Array<[string, (basket: number) => InjectOptions]> = [
        [
          'basketId',
          (basket) => ({
            method: 'POST',
            url: '/api/authItems',
            payload: { basketId: basket, sku: 'ref-1' },
          }),
        ],
        [
          '[1].basketId',
          (basket) => ({
            method: 'POST',
            url: '/api/authItems',
            payload: [
              { basketId: baskets.A1, sku: 'ref-2' },
              { basketId: basket, sku: 'ref-3' },
            ],
          }),
        ],
        [
          'basketId',
          (basket) => ({
            method: 'PATCH',
            url: `/api/authItems/${items.aliceInA1}`,
            payload: { basketId: basket },
          }),
        ],
        [
          '[0].basketId',
          (basket) => ({
            method: 'PATCH',
            url: '/api/authItems',
            payload: [{ id: items.aliceInA1, basketId: basket }],
          }),
        ],
        // An upsert's row (fresh or merged), and a nested create's child naming a basket of its own.
        [
          '[0].basketId',
          (basket) => ({
            method: 'POST',
            url: '/api/authItems',
            headers: { prefer: 'resolution=merge-duplicates' },
            payload: [{ basketId: basket, sku: 'ref-up' }],
          }),
        ],
        [
          '[0].basketId',
          (basket) => ({
            method: 'POST',
            url: '/api/authItems',
            headers: { prefer: 'resolution=merge-duplicates' },
            payload: [{ basketId: basket, sku: 'ref-mine' }],
          }),
        ],
        [
          'items[1].fromBasketId',
          (basket) => ({
            method: 'POST',
            url: '/api/authBaskets',
            payload: {
              code: 'REF',
              label: 'nested',
              items: [
                { sku: 'ref-n1', fromBasketId: baskets.A1 },
                { sku: 'ref-n2', fromBasketId: basket },
              ],
            },
          }),
        ],
      ];
      for (const [name, request] of cases) {
        const other = await refusedUnchanged(as.alice, request(baskets.B1), 422);
        const absent = await refusedUnchanged(as.alice, request(missing), 422);
        assert.equal(
          other.json<{ errors: Array<{ name: string }> }>().errors[0]?.name,
          name,
          other.body,
        );
        assert.equal(
          detailOf(other, baskets.B1),
          detailOf(absent, missing),
          "another owner's row and no row read alike",
        );
        assert.doesNotMatch(other.body, /bob/);
      }
      // Inside the caller's own rows, and for the admin (whose rule has no check), the references hold.
      const own = await send(as.alice, {
        method: 'POST',
        url: '/api/authItems',
        payload: { basketId: baskets.A1, sku: 'ref-own' },
      });
      assert.equal(own.statusCode, 201, own.body);
      const admin = await send(as.root, {
        method: 'POST',
        url: '/api/authItems',
        payload: { basketId: baskets.B1, sku: 'ref-admin', ownerId: 'alice' },
      });
      assert.equal(admin.statusCode, 201, admin.body);
      // The later tests count the fixture's items.
      await engine.sql(`delete from authz_items where sku in ('ref-own', 'ref-admin', 'ref-mine')`);
    });

    it("includes: included rows are scoped by the caller's rules of their entity, inside the statement; their hidden fields are absent and refused in fields[path]=", async () => {
      const get = await send(as.alice, { url: `/api/authBaskets/${baskets.A1}?include=items` });
      assert.equal(get.statusCode, 200, get.body);
      const basket = get.json<Json & { items: Json[] }>();
      assert.deepEqual(
        basket.items.map((i) => i.id),
        [items.aliceInA1],
        "bob's item in alice's basket was included",
      );
      assert.equal('price' in (basket.items[0] as Json), false);
      assert.equal('note' in basket, false);
      const list = await send(as.alice, { url: '/api/authBaskets?include=items&filter[code]=A1' });
      assert.deepEqual(
        list.json<Page>().items.map((b) => (b.items as Json[]).map((i) => i.id)),
        [[items.aliceInA1]],
      );
      // Another owner's basket through an item of the caller's that sits in it: read as missing (null).
      const inBob = await send(as.alice, {
        url: `/api/authItems/${items.aliceInB1}?include=basket`,
      });
      assert.equal(inBob.statusCode, 200, inBob.body);
      assert.equal(inBob.json<Json>().basket, null);
      // Every item of alice's is listed (bob's are not, in her basket or not), each with its basket only where the basket is hers.
      const mine = await send(as.alice, {
        url: `/api/authItems?include=basket&sort=id&filter[id][in]=${Object.values(items).join(',')}`,
      });
      assert.deepEqual(
        mine.json<Page>().items.map((i) => [i.id, (i.basket as Json | null)?.id ?? null]),
        [
          [items.aliceInA1, baskets.A1],
          [items.aliceInB1, null],
        ],
      );
      assert.equal(mine.json<Page>().total, 2);
      for (const url of [
        `/api/authBaskets/${baskets.A1}?include=items&fields[items]=id,price`,
        '/api/authBaskets?include=items&fields[items]=price',
      ]) {
        assertBadParameter(await send(as.alice, { url }), 'querystring', 'fields[items]');
      }
      assertBadParameter(
        await send(as.alice, {
          url: `/api/authItems/${items.aliceInA1}?include=basket&fields[basket]=note`,
        }),
        'querystring',
        'fields[basket]',
      );
      // The admin sees every row and field.
      const all = await send(as.root, {
        url: `/api/authBaskets/${baskets.A1}?include=items&fields[items]=id,price`,
      });
      assert.deepEqual(
        all.json<{ items: Json[] }>().items.map((i) => [i.id, i.price]),
        [
          [items.aliceInA1, 5],
          [items.bobInA1, 6],
        ],
      );
    });

    it("nested list route: a parent outside the caller's scope is a 404; the children listed are the caller's only, counted so; hidden fields unknown to fields=, sort= and filters", async () => {
      const other = await send(as.alice, { url: `/api/authBaskets/${baskets.B1}/items` });
      assert.equal(other.statusCode, 404, other.body);
      assert.doesNotMatch(other.body, /a-in-b1/);
      const own = await send(as.alice, { url: `/api/authBaskets/${baskets.A1}/items` });
      assert.equal(own.statusCode, 200, own.body);
      const page = own.json<Page>();
      assert.deepEqual(
        page.items.map((i) => i.id),
        [items.aliceInA1],
      );
      assert.equal(page.total, 1);
      assert.equal('price' in (page.items[0] as Json), false);
      assertBadParameter(
        await send(as.alice, { url: `/api/authBaskets/${baskets.A1}/items?sort=price` }),
        'querystring',
        'sort',
      );
      assertBadParameter(
        await send(as.alice, { url: `/api/authBaskets/${baskets.A1}/items?filter[price]=6` }),
        'querystring',
        'filter[price]',
      );
      assertBadParameter(
        await send(as.alice, { url: `/api/authBaskets/${baskets.A1}/items?filter[price][gt]=x` }),
        'querystring',
        'filter[price][gt]',
      );
      assertBadParameter(
        await send(as.alice, { url: `/api/authBaskets/${baskets.A1}/items?fields=id,price` }),
        'querystring',
        'fields',
      );
      const bob = await send(as.bob, { url: `/api/authBaskets/${baskets.A1}/items` });
      assert.equal(bob.statusCode, 404, bob.body);
      const root = await send(as.root, { url: `/api/authBaskets/${baskets.A1}/items?sort=price` });
      assert.deepEqual(
        root.json<Page>().items.map((i) => i.price),
        [5, 6],
      );
    });

    it('a token without a role that the included or nested-listed entity allows is refused (403), nothing read', async () => {
      const stranger = {
        authorization: `Bearer ${await authority.sign({ claims: { sub: 'eve', realm_access: { roles: ['visitor'] } } })}`,
      };
      assert.equal(
        (await send(stranger, { url: `/api/authBaskets/${baskets.A1}?include=items` })).statusCode,
        403,
      );
      assert.equal(
        (await send(stranger, { url: `/api/authBaskets/${baskets.A1}/items` })).statusCode,
        403,
      );
      assert.equal(
        (await send({}, { url: `/api/authBaskets/${baskets.A1}/items` })).statusCode,
        401,
      );
    });
  });
}
