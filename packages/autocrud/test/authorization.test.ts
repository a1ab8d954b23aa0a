// @test-lines: once - rules through Kit's API on each engine; the conformance suites check the drivers on every line
// AutoCrud authorization on every engine: the conformance suite on PostgreSQL (whose statement
// log shows the scope inside every generated statement), PGlite and SQLite (Node >= 22.13), and
// the declaration's start-up checks.
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { describe, it } from 'node:test';
import { AUDIENCE, TestAuthority } from '@kit/test-support/jwt-authority';
import { sqliteAvailable } from '../src/mapper/engines/sqlite/engine.ts';
import { authorizationSuite, OrdersEndpoint } from './suite/authorization.ts';
import { optionsSuite } from './suite/authorization-options.ts';
import { authorizationRelationsSuite, relationsFixture } from './suite/authorization-relations.ts';
import {
  AhBasketsEndpoint,
  AhItemsEndpoint,
  authorizationHistorySuite,
  HISTORY_TABLES,
} from './suite/authorization-history.ts';
import { crudApp } from './suite/fixtures.ts';
import { pgliteEngine, postgresEngine, sqliteEngine } from './suite/engines.ts';
import { describePostgres } from '@kit/test-support/postgres';

optionsSuite();

describePostgres('PostgreSQL', () => {
  // The server logs every statement: the tests below read the caller's scope in them.
  const postgres = postgresEngine({ settings: { log_statement: 'all' } });
  const engine = postgres.engine;
  authorizationSuite(engine);
  authorizationRelationsSuite(engine);
  authorizationHistorySuite(engine);

  it("the statement log shows the caller's scope in every statement a customer's requests run", async () => {
    const authority = await TestAuthority.start();
    const app = await crudApp(engine, {}, (opt) => opt.configureJwt(authority.url, [AUDIENCE]), [
      OrdersEndpoint,
    ]);
    try {
      const headers = {
        authorization: `Bearer ${await authority.sign({ claims: { sub: 'carol', realm_access: { roles: ['customer'] } } })}`,
      };
      const start = statSync(postgres.server().log).size;
      const created = await app.inject({
        method: 'POST',
        url: '/api/orders',
        headers,
        payload: { item: 'logged', amount: 1 },
      });
      assert.equal(created.statusCode, 201, created.body);
      const id = created.json<{ id: number }>().id;
      const requests = [
        { url: '/api/orders?filter[amount][gte]=0&sort=-amount' },
        { url: '/api/orders?pageSize=1&count=false' },
        { url: '/api/orders/all' },
        { url: `/api/orders/${id}` },
        {
          method: 'PUT' as const,
          url: `/api/orders/${id}`,
          payload: { item: 'logged', amount: 2 },
        },
        { method: 'PATCH' as const, url: `/api/orders/${id}`, payload: { amount: 3 } },
        { method: 'PATCH' as const, url: `/api/orders/${id}`, payload: {} },
        {
          method: 'PATCH' as const,
          url: `/api/orders/${id}`,
          headers: { 'if-match': '"99"' },
          payload: { amount: 4 },
        },
        { method: 'DELETE' as const, url: `/api/orders/${id}`, headers: { 'if-match': '"99"' } },
        { method: 'DELETE' as const, url: `/api/orders/${id}` },
      ];
      for (const request of requests)
        await app.inject({ ...request, headers: { ...headers, ...request.headers } });
      // The server writes its log asynchronously: wait for the last statement (the DELETE's soft-delete UPDATE... RETURNING "id" as "key").
      const text = await postgres
        .server()
        .logSince(start, (t) => (t.match(/as "key"/g) ?? []).length >= 1);
      const statements = text
        .split('\n')
        .filter(
          (line) =>
            /LOG: {2}(?:statement|execute [^:]*):/.test(line) && line.includes('"auth_orders"'),
        );
      // insert, 2 lists (page + count, page), all, get, put, patch, empty patch (get), 412 patch (update + version read), 2 deletes (+ version read)
      if (process.env.KIT_SHOW_STATEMENTS) console.log(statements.join('\n'));
      assert.ok(
        statements.length >= 13,
        `${statements.length} statements:\n${statements.join('\n')}`,
      );
      for (const line of statements) {
        if (/insert into/.test(line))
          assert.match(
            line,
            /insert into "auth_orders" \([^)]*"owner_id"/,
            `an insert that does not set the owner: ${line}`,
          );
        else
          assert.match(
            line,
            /where .*"owner_id" = \$\d+/,
            `a statement without the scope condition: ${line}`,
          );
      }
      // The owner bound is the caller's (the server logs each execution's parameters).
      assert.match(text, /parameters: .*= 'carol'/);
      // A where hook's conditions are inside the statements too.
      const shelfStart = statSync(postgres.server().log).size;
      const clerk = {
        authorization: `Bearer ${await authority.sign({ claims: { sub: 'dana', realm_access: { roles: ['clerk'] } } })}`,
        'x-shelf': 'public',
      };
      assert.equal((await app.inject({ url: '/api/orders', headers: clerk })).statusCode, 200);
      assert.equal(
        (await app.inject({ url: `/api/orders/${id}`, headers: clerk })).statusCode,
        404,
      );
      assert.equal(
        (
          await app.inject({
            method: 'PATCH',
            url: `/api/orders/${id}`,
            headers: clerk,
            payload: { amount: 9 },
          })
        ).statusCode,
        404,
      );
      const shelfText = await postgres
        .server()
        .logSince(shelfStart, (t) => /update "auth_orders"/.test(t));
      const shelfStatements = shelfText
        .split('\n')
        .filter(
          (line) =>
            /LOG: {2}(?:statement|execute [^:]*):/.test(line) && line.includes('"auth_orders"'),
        );
      assert.ok(shelfStatements.length >= 4, shelfStatements.join('\n'));
      for (const line of shelfStatements)
        assert.match(
          line,
          /where .*"status" = \$\d+/,
          `a statement without the hook's condition: ${line}`,
        );
    } finally {
      await app.close();
      await authority.stop();
    }
  });
  it("the statement log shows the caller's scope in every statement of a bulk create, an upsert, a bulk PATCH, a nested create, includes and a nested list", async () => {
    const authority = await TestAuthority.start();
    const { app, as, baskets, items } = await relationsFixture(engine, authority);
    try {
      const start = statSync(postgres.server().log).size;
      const requests = [
        {
          method: 'POST' as const,
          url: '/api/authBaskets',
          payload: [
            { code: 'L1', label: 'one' },
            { code: 'L2', label: 'two' },
          ],
        },
        {
          method: 'POST' as const,
          url: '/api/authBaskets',
          headers: { prefer: 'resolution=merge-duplicates' },
          payload: [
            { code: 'L1', label: 'one, merged' },
            { code: 'B1', label: 'not hers' },
          ],
        },
        {
          method: 'POST' as const,
          url: '/api/authBaskets',
          headers: { prefer: 'resolution=ignore-duplicates' },
          payload: [{ code: 'L1', label: 'ignored' }],
        },
        {
          method: 'PATCH' as const,
          url: '/api/authBaskets',
          payload: [{ id: baskets.A1, label: 'patched' }],
        },
        {
          method: 'PATCH' as const,
          url: '/api/authBaskets',
          payload: [{ id: baskets.B1, label: 'not hers', version: 1 }],
        },
        {
          method: 'POST' as const,
          url: '/api/authBaskets',
          payload: { code: 'L3', label: 'three', items: [{ sku: 'x' }, { sku: 'y' }] },
        },
        { url: `/api/authBaskets/${baskets.A1}?include=items` },
        { url: '/api/authBaskets?include=items' },
        { url: `/api/authItems/${items.aliceInB1}?include=basket` },
        { url: `/api/authBaskets/${baskets.A1}/items` },
        { url: `/api/authBaskets/${baskets.B1}/items` },
      ];
      const statuses = [];
      for (const request of requests)
        statuses.push(
          (await app.inject({ ...request, headers: { ...as.alice, ...request.headers } }))
            .statusCode,
        );
      assert.deepEqual(statuses, [201, 409, 200, 200, 404, 201, 200, 200, 200, 200, 404]);
      // The server writes its log asynchronously: wait for the last statement (the nested list's
      // parent read of B1, its key among the parameters PostgreSQL logs quoted).
      const text = await postgres
        .server()
        .logSince(
          start,
          (t) => (t.match(/"authz_items"/g) ?? []).length >= 8 && t.includes(`= '${baskets.B1}'`),
        );
      const statements = text
        .split('\n')
        .filter(
          (line) =>
            /LOG: {2}(?:statement|execute [^:]*):/.test(line) &&
            /"authz_(baskets|items)"/.test(line),
        );
      if (process.env.KIT_SHOW_STATEMENTS) console.log(statements.join('\n'));
      assert.ok(
        statements.length >= 20,
        `${statements.length} statements:\n${statements.join('\n')}`,
      );
      for (const line of statements) {
        if (/insert into/.test(line)) {
          assert.match(
            line,
            /insert into "authz_(baskets|items)" \([^)]*"owner_id"/,
            `an insert that does not set the owner: ${line}`,
          );
          // An upsert writes over an existing row only inside the scope.
          if (/on conflict .* do update/.test(line))
            assert.match(
              line,
              /do update set .* where .*"authz_baskets"\."owner_id" = \$\d+/,
              `an upsert that may write another owner's row: ${line}`,
            );
        } else {
          assert.match(
            line,
            /where .*"owner_id" = \$\d+/,
            `a statement without the scope condition: ${line}`,
          );
        }
        // An included entity's rows are read inside the caller's scope of that entity too.
        if (/"authz_items" as "kit_1"/.test(line))
          assert.match(
            line,
            /"kit_1"\."owner_id" = \$\d+/,
            `an include without its entity's scope: ${line}`,
          );
        if (/"authz_baskets" as "kit_1"/.test(line))
          assert.match(
            line,
            /"kit_1"\."owner_id" = \$\d+/,
            `an include without its entity's scope: ${line}`,
          );
      }
      assert.ok(
        statements.some((line) => /"authz_items" as "kit_1"/.test(line)),
        'no embedded include of items was logged',
      );
      assert.ok(
        statements.some((line) => /on conflict/.test(line)),
        'no upsert was logged',
      );
      assert.ok(
        statements.some(
          (line) => /^.*update "authz_baskets"/.test(line) && !/on conflict/.test(line),
        ),
        'no bulk PATCH was logged',
      );
      assert.doesNotMatch(text, /parameters: .*= 'bob'/, 'a statement bound another owner');
    } finally {
      await app.close();
      await authority.stop();
    }
  });
  it("the statement log shows the caller's scope in every statement of a recorded write: the locked before-reads, the writes, the version re-reads", async () => {
    for (const table of HISTORY_TABLES) await engine.sql(`drop table if exists ${table}`);
    const authority = await TestAuthority.start();
    const app = await crudApp(
      engine,
      { outbox: { dispatch: false } },
      (opt) => opt.configureJwt(authority.url, [AUDIENCE]),
      [AhBasketsEndpoint, AhItemsEndpoint],
    );
    try {
      const token = async (sub: string, roles: string[]) => ({
        authorization: `Bearer ${await authority.sign({ claims: { sub, realm_access: { roles } } })}`,
      });
      const alice = await token('alice', ['customer']);
      const root = await token('root', ['admin']);
      const make = async (payload: Record<string, unknown>) => {
        const res = await app.inject({
          method: 'POST',
          url: '/api/ahBaskets',
          headers: root,
          payload,
        });
        assert.equal(res.statusCode, 201, res.body);
        return res.json<{ id: number }>().id;
      };
      const mine = await make({ code: 'L1', label: 'one', ownerId: 'alice' });
      const gone = await make({ code: 'L2', label: 'two', ownerId: 'alice' });
      const bobs = await make({ code: 'L3', label: 'three', ownerId: 'bob' });
      const start = statSync(postgres.server().log).size;
      const requests = [
        {
          method: 'PATCH' as const,
          url: `/api/ahBaskets/${mine}`,
          payload: { label: 'one, patched' },
        },
        {
          method: 'PATCH' as const,
          url: `/api/ahBaskets/${mine}`,
          headers: { 'if-match': '"9"' },
          payload: { label: 'stale' },
        },
        {
          method: 'PUT' as const,
          url: `/api/ahBaskets/${mine}`,
          payload: { code: 'L1', label: 'one, replaced' },
        },
        {
          method: 'PATCH' as const,
          url: '/api/ahBaskets',
          payload: [{ id: mine, label: 'one, bulk' }],
        },
        {
          method: 'POST' as const,
          url: '/api/ahBaskets',
          headers: { prefer: 'resolution=merge-duplicates' },
          payload: { code: 'L1', label: 'one, upserted' },
        },
        { method: 'PATCH' as const, url: `/api/ahBaskets/${bobs}`, payload: { label: 'not hers' } },
        { method: 'DELETE' as const, url: `/api/ahBaskets/${gone}` },
      ];
      const statuses = [];
      for (const request of requests)
        statuses.push(
          (await app.inject({ ...request, headers: { ...alice, ...request.headers } })).statusCode,
        );
      assert.deepEqual(statuses, [200, 412, 200, 200, 200, 404, 204]);
      const text = await postgres
        .server()
        .logSince(start, (t) => /delete from "ah_baskets"/.test(t));
      const statements = text
        .split('\n')
        .filter(
          (line) =>
            /LOG: {2}(?:statement|execute [^:]*):/.test(line) && line.includes('"ah_baskets"'),
        );
      if (process.env.KIT_SHOW_STATEMENTS) console.log(statements.join('\n'));
      assert.ok(
        statements.some((line) => /for update/.test(line)),
        `no locked before-read was logged:\n${statements.join('\n')}`,
      );
      assert.ok(
        statements.length >= 10,
        `${statements.length} statements:\n${statements.join('\n')}`,
      );
      for (const line of statements) {
        // An upsert (insert into the table itself); the one-statement writes insert into kit_changes and kit_outbox, scoped in their kit_old.
        if (/insert into "ah_baskets"/.test(line))
          assert.match(
            line,
            /do update set .* where .*"ah_baskets"\."owner_id" = \$\d+/,
            `an upsert that may write another owner's row: ${line}`,
          );
        else
          assert.match(
            line,
            /where .*"owner_id" = \$\d+/,
            `a statement without the scope condition: ${line}`,
          );
      }
      assert.doesNotMatch(text, /parameters: .*= 'bob'/, 'a statement bound another owner');
    } finally {
      await app.close();
      await authority.stop();
      for (const table of HISTORY_TABLES) await engine.sql(`drop table if exists ${table}`);
    }
  });
});

describe('PGlite', () => {
  const engine = pgliteEngine();
  authorizationSuite(engine);
  authorizationRelationsSuite(engine);
  authorizationHistorySuite(engine);
});

if (!sqliteAvailable()) {
  it('AutoCrud authorization on node:sqlite', (t) =>
    t.skip(`node:sqlite is not in Node ${process.version} (it is from 22.13 and 23.4)`));
} else {
  describe('node:sqlite', () => {
    const engine = sqliteEngine('kit-sqlite-authz-');
    authorizationSuite(engine);
    authorizationRelationsSuite(engine);
    authorizationHistorySuite(engine);
  });
}
