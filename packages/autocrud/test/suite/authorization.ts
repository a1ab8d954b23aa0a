// Authorization conformance on one engine: roles per operation, row checks bound to claims, hidden
// and read-only fields, a `where` hook, with real tokens from a test OpenID authority. Identities:
// alice and bob (customers, each owning orders), root (admin), a token with no role, and no token.
// Every refused attempt is shown to change nothing: the table's rows, hashed, before and after.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, InjectOptions } from 'fastify';
import {
  AutoCrud,
  autoCrudAccess,
  CrudOperations,
  defineEntity,
  KIT_AUTOCRUD,
  type KitAutoCrud,
} from '@kit/autocrud';
import { AUDIENCE, TestAuthority } from '@kit/test-support/jwt-authority';
import { bearer, callerRequests, tablesFingerprint } from './authorization-fixtures.ts';
import { redoclyLint } from '@kit/test-support/redocly';
import { assertBadParameter, crudApp, type EngineUnderTest } from './fixtures.ts';

export const Order = defineEntity({
  name: 'Order',
  table: 'auth_orders',
  schema: Type.Object({
    id: Type.Integer(),
    ownerId: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
    item: Type.String({ minLength: 1, maxLength: 100 }),
    amount: Type.Integer({ minimum: 0 }),
    cost: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
    status: Type.Optional(Type.Union([Type.String({ maxLength: 20 }), Type.Null()])),
    version: Type.Integer(),
    isDeleted: Type.Boolean(),
  }),
  writable: ['ownerId', 'item', 'amount', 'cost', 'status'],
  version: 'version',
  softDelete: 'isDeleted',
  columns: { ownerId: 'owner_id', isDeleted: 'is_deleted' },
});

const EVERYTHING = CrudOperations.All | CrudOperations.ListAll | CrudOperations.Patch;

@AutoCrud(Order, {
  operations: EVERYTHING,
  idempotency: true,
  authorization: {
    rolesClaim: 'realm_access.roles',
    rules: [
      { role: 'admin', allow: EVERYTHING },
      {
        role: 'customer',
        allow: EVERYTHING,
        checks: { ownerId: 'sub' },
        hiddenFields: ['cost'],
        readOnlyFields: ['status'],
      },
      // A clerk works on one shelf at a time (the status), named by a header: the where hook.
      {
        role: 'clerk',
        allow: CrudOperations.List | CrudOperations.Get | CrudOperations.Patch,
        readOnlyFields: ['ownerId'],
        where: (request) => {
          const shelf = request.headers['x-shelf'];
          return typeof shelf === 'string' ? [{ field: 'status', op: 'eq', value: shelf }] : false;
        },
      },
      // Anyone may list the orders on public display, without who owns them or what they cost.
      {
        anonymous: true,
        allow: CrudOperations.List,
        hiddenFields: ['ownerId', 'cost'],
        where: () => [{ field: 'status', op: 'eq', value: 'public' }],
      },
    ],
  },
})
export class OrdersEndpoint {}

// A hand-written GET {id} replacing the generated one: it keeps the generated route's guard and
// reads the caller's scope to stay inside the caller's rows.
@AutoCrud(Order, {
  operations: CrudOperations.List | CrudOperations.Get,
  authorization: {
    rolesClaim: 'realm_access.roles',
    rules: [
      {
        role: 'customer',
        allow: CrudOperations.List | CrudOperations.Get,
        checks: { ownerId: 'sub' },
        hiddenFields: ['cost'],
      },
    ],
  },
})
export class OrderDeskEndpoint {
  addRoutes(app: FastifyInstance) {
    app.get<{ Params: { id: string } }>('{id}', async (request, reply) => {
      const access = autoCrudAccess(request);
      const order = await app.kit.services
        .resolve<KitAutoCrud>(KIT_AUTOCRUD)
        .repository(Order)
        .get(Number(request.params.id), { scope: access?.scope });
      if (!order) return reply.code(404).send();
      const shown: Record<string, unknown> = { ...order, handWritten: true };
      for (const name of access?.hiddenFields ?? []) delete shown[name];
      return shown;
    });
  }
}

type Page = { items: Array<Record<string, unknown>>; total: number; next: string | null };

/** The identities of the suite, as request headers. */
interface Callers {
  clerk: Record<string, string>;
  alice: Record<string, string>;
  bob: Record<string, string>;
  root: Record<string, string>;
  nobody: Record<string, string>;
  anonymous: Record<string, string>;
}

export function authorizationSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud authorization on ${engine.name}`, () => {
    let authority: TestAuthority;
    let app: FastifyInstance;
    let as: Callers;
    const ids = { alice: [] as number[], bob: [] as number[], public: 0 };
    // Every log line of the app: no refusal may log at error level.
    const logged: Array<{ level: number; msg?: string }> = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n'))
          if (line.trim() !== '') logged.push(JSON.parse(line) as { level: number; msg?: string });
        done();
      },
    });

    const fingerprint = tablesFingerprint(engine, ['auth_orders']);
    const { send, refusedUnchanged } = callerRequests(() => app, fingerprint);

    before(async () => {
      await engine.sql('drop table if exists auth_orders');
      authority = await TestAuthority.start();
      app = await crudApp(
        engine,
        {},
        (opt) => opt.configureJwt(authority.url, [AUDIENCE]),
        [OrdersEndpoint],
        { logger: { level: 'debug', stream } },
      );
      const token = (sub: string, roles?: string[] | string) => bearer(authority, sub, roles);
      as = {
        clerk: await token('dana', 'clerk'),
        alice: await token('alice', ['customer']),
        bob: await token('bob', ['customer']),
        root: await token('root', ['admin']),
        nobody: await token('nobody'),
        anonymous: {},
      };
      for (const [who, n] of [
        ['alice', 3],
        ['bob', 2],
      ] as const) {
        for (let i = 1; i <= n; i++) {
          const res = await send(as[who], {
            method: 'POST',
            url: '/api/orders',
            payload: { item: `${who}-${i}`, amount: i },
          });
          assert.equal(res.statusCode, 201, res.body);
          ids[who].push(res.json<{ id: number }>().id);
        }
      }
      // The admin sets what customers may not: the cost, the status, and whose order it is.
      const shown = await send(as.root, {
        method: 'POST',
        url: '/api/orders',
        payload: { item: 'window display', amount: 1, cost: 7, status: 'public' },
      });
      assert.equal(shown.statusCode, 201, shown.body);
      ids.public = shown.json<{ id: number }>().id;
      const costed = await send(as.root, {
        method: 'PATCH',
        url: `/api/orders/${ids.alice[0]}`,
        payload: { cost: 11 },
      });
      assert.equal(costed.statusCode, 200, costed.body);
    });
    after(async () => {
      await app?.close();
      await authority?.stop();
    });

    it("a create sets the owner from the token: alice's and bob's orders are theirs, the admin's has none", async () => {
      const rows = await engine.sql('select id, owner_id from auth_orders order by id');
      const owner = (id: number) => rows.find((r) => Number(r.id) === id)?.owner_id;
      for (const id of ids.alice) assert.equal(owner(id), 'alice');
      for (const id of ids.bob) assert.equal(owner(id), 'bob');
      assert.equal(owner(ids.public), null);
    });

    it('list: each customer pages through their own rows only, total counting only those; the admin sees all', async () => {
      for (const who of ['alice', 'bob'] as const) {
        const page = (await send(as[who], { url: '/api/orders?sort=-amount' })).json<Page>();
        assert.equal(page.total, ids[who].length);
        assert.deepEqual(page.items.map((r) => r.id).sort(), [...ids[who]].sort());
        for (const row of page.items) {
          assert.equal(row.ownerId, who);
          assert.ok(!('cost' in row), `a customer sees no cost: ${JSON.stringify(row)}`);
        }
        // Filters narrow within the scope, never past it.
        const other = (
          await send(as[who], {
            url: `/api/orders?filter[ownerId]=${who === 'alice' ? 'bob' : 'alice'}`,
          })
        ).json<Page>();
        assert.equal(other.total, 0);
        assert.deepEqual(other.items, []);
        const byId = (
          await send(as[who], {
            url: `/api/orders?filter[id][in]=${[...ids.alice, ...ids.bob, ids.public].join(',')}`,
          })
        ).json<Page>();
        assert.equal(byId.total, ids[who].length);
        const ored = (
          await send(as[who], {
            url: '/api/orders?filter[or][0][amount][gte]=0&filter[or][1][status]=public',
          })
        ).json<Page>();
        assert.equal(ored.total, ids[who].length);
      }
      const all = (await send(as.root, { url: '/api/orders' })).json<Page>();
      assert.equal(all.total, ids.alice.length + ids.bob.length + 1);
      assert.equal(all.items.find((r) => r.id === ids.alice[0])?.cost, 11);
    });

    it("cursors page through the caller's rows only, and a cursor issued to one caller is refused to another", async () => {
      const seen: unknown[] = [];
      let url = '/api/orders?pageSize=1&sort=item';
      let first: string | null = null;
      for (let i = 0; i < 10; i++) {
        const page = (await send(as.alice, { url })).json<Page>();
        seen.push(...page.items.map((r) => r.id));
        if (!page.next) break;
        first ??= page.next;
        url = `/api/orders?pageSize=1&sort=item&after=${encodeURIComponent(page.next)}`;
      }
      assert.deepEqual(seen, ids.alice);
      assert.ok(first);
      const stolen = await send(as.bob, {
        url: `/api/orders?pageSize=1&sort=item&after=${encodeURIComponent(first)}`,
      });
      assertBadParameter(stolen, 'querystring', 'after');
      const admin = await send(as.root, {
        url: `/api/orders?pageSize=1&sort=item&after=${encodeURIComponent(first)}`,
      });
      assertBadParameter(admin, 'querystring', 'after');
    });

    it("/all answers the caller's rows only", async () => {
      const rows = (await send(as.bob, { url: '/api/orders/all' })).json<
        Array<Record<string, unknown>>
      >();
      assert.deepEqual(
        rows.map((r) => r.id),
        ids.bob,
      );
      assert.ok(rows.every((r) => !('cost' in r)));
      assert.equal(
        (await send(as.root, { url: '/api/orders/all' })).json<unknown[]>().length,
        ids.alice.length + ids.bob.length + 1,
      );
    });

    it("get: another owner's id in the path is a 404 exactly like an id that does not exist (no existence oracle)", async () => {
      const theirs = await send(as.alice, { url: `/api/orders/${ids.bob[0]}` });
      const nothing = await send(as.alice, { url: '/api/orders/999999' });
      assert.equal(theirs.statusCode, 404);
      assert.equal(nothing.statusCode, 404);
      assert.deepEqual(
        theirs.json<{ detail: string }>().detail.replace(String(ids.bob[0]), 'N'),
        nothing.json<{ detail: string }>().detail.replace('999999', 'N'),
      );
      assert.equal(theirs.headers.etag, undefined);
      const own = await send(as.alice, { url: `/api/orders/${ids.alice[0]}` });
      assert.equal(own.statusCode, 200);
      assert.equal(own.json<Record<string, unknown>>().ownerId, 'alice');
      assert.ok(!('cost' in own.json<Record<string, unknown>>()));
      assert.equal((await send(as.root, { url: `/api/orders/${ids.bob[0]}` })).statusCode, 200);
      // Fastify's HEAD twins of the GET routes run the same hooks and queries.
      assert.equal(
        (await send(as.alice, { method: 'HEAD', url: `/api/orders/${ids.bob[0]}` })).statusCode,
        404,
      );
      assert.equal(
        (await send(as.alice, { method: 'HEAD', url: `/api/orders/${ids.alice[0]}` })).statusCode,
        200,
      );
      assert.equal(
        (await send(as.anonymous, { method: 'HEAD', url: `/api/orders/${ids.alice[0]}` }))
          .statusCode,
        401,
      );
      assert.equal(
        (await send(as.nobody, { method: 'HEAD', url: '/api/orders/all' })).statusCode,
        403,
      );
    });

    it("ETags give no version oracle across scopes: If-None-Match and If-Match on another owner's row are 404, never 304 or 412", async () => {
      for (const tag of ['"1"', '"2"', '"999"', '*']) {
        assert.equal(
          (
            await send(as.alice, {
              url: `/api/orders/${ids.bob[0]}`,
              headers: { 'if-none-match': tag },
            })
          ).statusCode,
          404,
          tag,
        );
        await refusedUnchanged(
          as.alice,
          {
            method: 'PUT',
            url: `/api/orders/${ids.bob[0]}`,
            headers: { 'if-match': tag },
            payload: { item: 'x', amount: 1 },
          },
          404,
        );
        await refusedUnchanged(
          as.alice,
          {
            method: 'PATCH',
            url: `/api/orders/${ids.bob[0]}`,
            headers: { 'if-match': tag },
            payload: { item: 'x' },
          },
          404,
        );
        await refusedUnchanged(
          as.alice,
          { method: 'DELETE', url: `/api/orders/${ids.bob[0]}`, headers: { 'if-match': tag } },
          404,
        );
      }
      // On her own row a stale tag is the usual 412.
      await refusedUnchanged(
        as.alice,
        {
          method: 'PATCH',
          url: `/api/orders/${ids.alice[1]}`,
          headers: { 'if-match': '"999"' },
          payload: { item: 'x' },
        },
        412,
      );
      const current = await send(as.alice, {
        url: `/api/orders/${ids.alice[1]}`,
        headers: { 'if-none-match': '"1"' },
      });
      assert.equal(current.statusCode, 304);
    });

    it("OWASP API1: update, patch and delete of another owner's row are 404 and change nothing", async () => {
      for (const id of [...ids.bob, ids.public]) {
        await refusedUnchanged(
          as.alice,
          { method: 'PUT', url: `/api/orders/${id}`, payload: { item: 'mine now', amount: 0 } },
          404,
        );
        await refusedUnchanged(
          as.alice,
          { method: 'PATCH', url: `/api/orders/${id}`, payload: { amount: 0 } },
          404,
        );
        await refusedUnchanged(
          as.alice,
          { method: 'PATCH', url: `/api/orders/${id}`, payload: {} },
          404,
        );
        await refusedUnchanged(as.alice, { method: 'DELETE', url: `/api/orders/${id}` }, 404);
      }
    });

    it("OWASP API3: a create or write body naming another owner is 403 and changes nothing; naming one's own is taken", async () => {
      await refusedUnchanged(
        as.alice,
        {
          method: 'POST',
          url: '/api/orders',
          payload: { item: 'for bob', amount: 1, ownerId: 'bob' },
        },
        403,
      );
      await refusedUnchanged(
        as.alice,
        {
          method: 'POST',
          url: '/api/orders',
          payload: { item: 'for no one', amount: 1, ownerId: null },
        },
        403,
      );
      await refusedUnchanged(
        as.alice,
        {
          method: 'PUT',
          url: `/api/orders/${ids.alice[0]}`,
          payload: { item: 'give away', amount: 1, ownerId: 'bob' },
        },
        403,
      );
      await refusedUnchanged(
        as.alice,
        { method: 'PATCH', url: `/api/orders/${ids.alice[0]}`, payload: { ownerId: 'bob' } },
        403,
      );
      // A field the rule makes read-only: refused, even on her own row.
      await refusedUnchanged(
        as.alice,
        { method: 'PATCH', url: `/api/orders/${ids.alice[0]}`, payload: { status: 'public' } },
        403,
      );
      await refusedUnchanged(
        as.alice,
        {
          method: 'POST',
          url: '/api/orders',
          payload: { item: 'shown', amount: 1, status: 'public' },
        },
        403,
      );
      const own = await send(as.alice, {
        method: 'POST',
        url: '/api/orders',
        payload: { item: 'named self', amount: 2, ownerId: 'alice' },
      });
      assert.equal(own.statusCode, 201, own.body);
      assert.equal(own.json<Record<string, unknown>>().ownerId, 'alice');
      ids.alice.push(own.json<{ id: number }>().id);
    });

    it('PUT by a customer leaves the owner, the read-only status and the hidden cost as they are', async () => {
      const id = ids.alice[0] as number;
      await engine.sql(`update auth_orders set status = 'packed' where id = ${id}`);
      const put = await send(as.alice, {
        method: 'PUT',
        url: `/api/orders/${id}`,
        payload: { item: 'renamed', amount: 5 },
      });
      assert.equal(put.statusCode, 200, put.body);
      const [row] = await engine.sql(
        `select owner_id, status, cost, item from auth_orders where id = ${id}`,
      );
      // PostgreSQL's bigint comes back as text through pg.
      assert.deepEqual(
        { ...row, cost: Number(row?.cost) },
        { owner_id: 'alice', status: 'packed', cost: 11, item: 'renamed' },
      );
    });

    it('hidden fields: absent from answers, and fields=, sort= and filters on them are 400 as for a field that does not exist', async () => {
      const unknown = await send(as.alice, { url: '/api/orders?filter[weight]=1' });
      assertBadParameter(unknown, 'querystring', 'filter[weight]', /names no field of Order/);
      for (const query of [
        'filter[cost]=11',
        'filter[cost][gt]=0',
        'filter[cost][null]=false',
        'filter[or][0][cost]=11',
      ]) {
        const res = await send(as.alice, { url: `/api/orders?${query}` });
        assertBadParameter(
          res,
          'querystring',
          query.slice(0, query.indexOf('=')),
          /names no field of Order; fields: id, ownerId, item, amount, status, version, isDeleted$/,
        );
      }
      assertBadParameter(
        await send(as.alice, { url: '/api/orders?sort=cost' }),
        'querystring',
        'sort',
        /fields of Order \(id, ownerId, item, amount, status, version, isDeleted\)/,
      );
      assertBadParameter(
        await send(as.alice, { url: '/api/orders?sort=-cost' }),
        'querystring',
        'sort',
      );
      assertBadParameter(
        await send(as.alice, { url: '/api/orders?fields=id,cost' }),
        'querystring',
        'fields',
        /"cost", which is not a field of Order/,
      );
      assertBadParameter(
        await send(as.alice, { url: `/api/orders/${ids.alice[0]}?fields=cost` }),
        'querystring',
        'fields',
      );
      const partial = await send(as.alice, { url: `/api/orders/${ids.alice[0]}?fields=id,item` });
      assert.deepEqual(Object.keys(partial.json<object>()), ['id', 'item']);
      // The admin's rule hides nothing.
      assert.equal(
        (await send(as.root, { url: '/api/orders?filter[cost]=11' })).json<Page>().total,
        1,
      );
      // Writes answer without the hidden field too.
      const patched = await send(as.alice, {
        method: 'PATCH',
        url: `/api/orders/${ids.alice[0]}`,
        payload: { amount: 6 },
      });
      assert.equal(patched.statusCode, 200, patched.body);
      assert.ok(!('cost' in patched.json<object>()));
    });

    it('roles per operation: no token is 401, a token without a role is 403 (nothing read or written), an anonymous rule lets the list in with its own scope', async () => {
      const writes: InjectOptions[] = [
        { method: 'POST', url: '/api/orders', payload: { item: 'x', amount: 1 } },
        { method: 'PUT', url: `/api/orders/${ids.alice[0]}`, payload: { item: 'x', amount: 1 } },
        { method: 'PATCH', url: `/api/orders/${ids.alice[0]}`, payload: { item: 'x' } },
        { method: 'DELETE', url: `/api/orders/${ids.alice[0]}` },
        { method: 'GET', url: `/api/orders/${ids.alice[0]}` },
        { method: 'GET', url: '/api/orders/all' },
      ];
      for (const request of writes) {
        const res = await refusedUnchanged(as.anonymous, request, 401);
        assert.equal(res.headers['www-authenticate'], 'Bearer');
        const forbidden = await refusedUnchanged(as.nobody, request, 403);
        assert.equal(forbidden.json<{ title: string }>().title, 'Forbidden');
      }
      // A bad token is refused even where no token is needed.
      assert.equal(
        (await send({ authorization: 'Bearer not.a.token' }, { url: '/api/orders' })).statusCode,
        401,
      );
      for (const caller of [as.anonymous, as.nobody]) {
        const page = (await send(caller, { url: '/api/orders' })).json<Page>();
        assert.equal(page.total, 1);
        assert.deepEqual(Object.keys(page.items[0] ?? {}).sort(), [
          'amount',
          'id',
          'isDeleted',
          'item',
          'status',
          'version',
        ]);
        assertBadParameter(
          await send(caller, { url: '/api/orders?filter[ownerId]=alice' }),
          'querystring',
          'filter[ownerId]',
        );
      }
    });

    it('the where hook: its conditions scope every statement of the request as row checks do; false refuses (403)', async () => {
      const shelf = { 'x-shelf': 'public' };
      const page = (await send(as.clerk, { url: '/api/orders', headers: shelf })).json<Page>();
      assert.equal(page.total, 1);
      assert.equal(page.items[0]?.id, ids.public);
      assert.equal(
        (await send(as.clerk, { url: `/api/orders/${ids.public}`, headers: shelf })).statusCode,
        200,
      );
      assert.equal(
        (await send(as.clerk, { url: `/api/orders/${ids.alice[1]}`, headers: shelf })).statusCode,
        404,
      );
      await refusedUnchanged(
        as.clerk,
        {
          method: 'PATCH',
          url: `/api/orders/${ids.alice[1]}`,
          headers: shelf,
          payload: { amount: 40 },
        },
        404,
      );
      await refusedUnchanged(
        as.clerk,
        { method: 'PATCH', url: `/api/orders/${ids.public}`, payload: { amount: 40 } },
        403,
      );
      await refusedUnchanged(as.clerk, { url: '/api/orders' }, 403);
      await refusedUnchanged(
        as.clerk,
        {
          method: 'PATCH',
          url: `/api/orders/${ids.public}`,
          headers: shelf,
          payload: { ownerId: 'dana' },
        },
        403,
      );
      await refusedUnchanged(
        as.clerk,
        { method: 'DELETE', url: `/api/orders/${ids.public}`, headers: shelf },
        403,
      );
      // A write cannot move the row off the clerk's shelf: the hook's eq condition is kept.
      const moved = await send(as.clerk, {
        method: 'PATCH',
        url: `/api/orders/${ids.public}`,
        headers: shelf,
        payload: { amount: 40, status: 'archive' },
      });
      assert.equal(moved.statusCode, 200, moved.body);
      assert.deepEqual(
        [
          moved.json<Record<string, unknown>>().amount,
          moved.json<Record<string, unknown>>().status,
        ],
        [40, 'public'],
      );
    });

    it('a customer token without the claim a row check binds is 403, never every row', async () => {
      const anonymousCustomer = {
        authorization: `Bearer ${await authority.sign({ claims: { sub: undefined, realm_access: { roles: ['customer'] } } })}`,
      };
      const numericSub = {
        authorization: `Bearer ${await authority.sign({ claims: { sub: { id: 'alice' }, realm_access: { roles: ['customer'] } } })}`,
      };
      for (const caller of [anonymousCustomer, numericSub]) {
        const res = await refusedUnchanged(caller, { url: '/api/orders' }, 403);
        assert.match(
          res.json<{ detail: string }>().detail,
          /claim sub does not say whose Order rows/,
        );
        await refusedUnchanged(
          caller,
          { method: 'POST', url: '/api/orders', payload: { item: 'x', amount: 1 } },
          403,
        );
      }
    });

    it('400s of the query-string schema do not tell a hidden field from a missing one', async () => {
      for (const query of [
        'filter[cost]=abc',
        'filter[cost][like]=1',
        'filter[cost][nope]=1',
        'filter[or][0][cost]=abc',
        'filter[cost][in]=1,2,99999999999999999999',
        'filter[cost][gt]=1e400',
        'filter[weight]=1',
      ]) {
        const res = await send(as.alice, { url: `/api/orders?${query}` });
        assertBadParameter(
          res,
          'querystring',
          query.slice(0, query.indexOf('=')),
          /names no field of Order; fields: id, ownerId, item, amount, status, version, isDeleted$/,
        );
      }
      for (const [query, name] of [
        ['sort=weight', 'sort'],
        ['fields=weight', 'fields'],
      ] as const) {
        const res = await send(as.alice, { url: `/api/orders?${query}` });
        assertBadParameter(res, 'querystring', name);
        assert.ok(!res.body.includes('cost'), res.body);
      }
    });

    it('a refused role is answered before the body is read: 403 (401 without a token) even for a body that is not JSON', async () => {
      for (const [caller, status] of [
        [as.nobody, 403],
        [as.anonymous, 401],
      ] as const) {
        await refusedUnchanged(
          caller,
          {
            method: 'POST',
            url: '/api/orders',
            headers: { 'content-type': 'text/plain' },
            payload: 'not json',
          },
          status,
        );
        await refusedUnchanged(
          caller,
          {
            method: 'PATCH',
            url: `/api/orders/${ids.alice[0]}`,
            headers: { 'content-type': 'application/json' },
            payload: '{"amount":',
          },
          status,
        );
      }
    });

    it("an Idempotency-Key replay never answers another identity's row", async () => {
      const key = { 'idempotency-key': 'auth-shared-key' };
      const payload = { item: 'replayed', amount: 3 };
      const first = await send(as.alice, {
        method: 'POST',
        url: '/api/orders',
        headers: key,
        payload,
      });
      assert.equal(first.statusCode, 201, first.body);
      const other = await send(as.bob, {
        method: 'POST',
        url: '/api/orders',
        headers: key,
        payload,
      });
      assert.equal(other.statusCode, 201, other.body);
      assert.equal(other.headers['idempotent-replayed'], 'false');
      assert.equal(other.json<Record<string, unknown>>().ownerId, 'bob');
      assert.notEqual(other.json<{ id: number }>().id, first.json<{ id: number }>().id);
      const before = await fingerprint();
      const again = await send(as.alice, {
        method: 'POST',
        url: '/api/orders',
        headers: key,
        payload,
      });
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.deepEqual(again.json(), first.json());
      assert.deepEqual(await fingerprint(), before);
      ids.alice.push(first.json<{ id: number }>().id);
      ids.bob.push(other.json<{ id: number }>().id);
    });

    it('delete: a customer deletes her own row; then it is gone for her and counted by no one', async () => {
      const id = ids.alice.pop() as number;
      assert.equal(
        (await send(as.alice, { method: 'DELETE', url: `/api/orders/${id}` })).statusCode,
        204,
      );
      assert.equal((await send(as.alice, { url: `/api/orders/${id}` })).statusCode, 404);
      assert.equal(
        (await send(as.alice, { url: '/api/orders' })).json<Page>().total,
        ids.alice.length,
      );
      assert.equal(
        (await send(as.root, { url: '/api/orders' })).json<Page>().total,
        ids.alice.length + ids.bob.length + 1,
      );
    });

    it("a hand-written replacement keeps the rule (401, 403) and, through autoCrudAccess, the caller's scope", async () => {
      const desk = await crudApp(engine, {}, (opt) => opt.configureJwt(authority.url, [AUDIENCE]), [
        OrderDeskEndpoint,
      ]);
      try {
        const own = await desk.inject({ url: `/api/orderDesk/${ids.alice[0]}`, headers: as.alice });
        assert.equal(own.statusCode, 200, own.body);
        assert.equal(own.json<Record<string, unknown>>().handWritten, true);
        assert.ok(!('cost' in own.json<object>()));
        assert.equal(
          (await desk.inject({ url: `/api/orderDesk/${ids.bob[0]}`, headers: as.alice }))
            .statusCode,
          404,
        );
        assert.equal(
          (await desk.inject({ url: `/api/orderDesk/${ids.alice[0]}`, headers: as.root }))
            .statusCode,
          403,
        );
        assert.equal(
          (await desk.inject({ url: `/api/orderDesk/${ids.alice[0]}` })).statusCode,
          401,
        );
      } finally {
        await desk.close();
      }
    });

    it('authorization without configureJwt fails start-up with KIT_ERR_JWT_NOT_CONFIGURED', async () => {
      await assert.rejects(
        crudApp(engine, {}, undefined, [OrdersEndpoint]),
        (err: Error & { code?: string }) => err.code === 'KIT_ERR_JWT_NOT_CONFIGURED',
      );
    });

    it('no refusal logged at error level', () => {
      const errors = logged.filter((line) => line.level >= 50);
      assert.deepEqual(errors, []);
      assert.ok(logged.length > 0);
    });

    it('the document: bearer security and a 403 answer on every operation; the anonymous list says the token is optional', async () => {
      const doc = (await app.inject({ url: '/openapi.json' })).json<{
        paths: Record<
          string,
          Record<string, { security?: unknown[]; responses: Record<string, unknown> }>
        >;
      }>();
      const ops = [
        ['/api/orders', 'get'],
        ['/api/orders', 'post'],
        ['/api/orders/all', 'get'],
        ['/api/orders/{id}', 'get'],
        ['/api/orders/{id}', 'put'],
        ['/api/orders/{id}', 'patch'],
        ['/api/orders/{id}', 'delete'],
      ] as const;
      for (const [path, method] of ops) {
        const op = doc.paths[path]?.[method];
        assert.ok(op, `${method} ${path}`);
        assert.ok('403' in op.responses, `${method} ${path} lists 403`);
        assert.ok('401' in op.responses, `${method} ${path} lists 401`);
        const expected =
          path === '/api/orders' && method === 'get'
            ? [{}, { bearerAuth: [] }]
            : [{ bearerAuth: [] }];
        assert.deepEqual(op.security, expected, `${method} ${path}`);
      }
      // The document is the same on every engine: linted once.
      if (engine.name === 'PGlite') {
        const { ok, output } = await redoclyLint(doc);
        assert.ok(ok, output);
      }
    });
  });
}
