// Start-up on one engine: the schema check naming what is missing, createTables, and the
// requireAuthorization option (401 without a token, the bearer scheme in the document).
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, useKit } from '@kit/core';
import {
  addKitAutoCrud,
  AutoCrud,
  defineEntity,
  KIT_AUTOCRUD,
  type KitAutoCrud,
} from '@kit/autocrud';
import { AUDIENCE, TestAuthority } from '@kit/test-support/jwt-authority';
import {
  crudApp,
  Product,
  ProductEndpoint,
  suiteTables,
  type EngineUnderTest,
} from './fixtures.ts';

const Broken = defineEntity({
  name: 'BrokenThing',
  table: 'broken_things',
  schema: Type.Object({ id: Type.Integer(), name: Type.String(), weight: Type.Number() }),
  writable: ['name', 'weight'],
});
@AutoCrud(Broken)
class BrokenThingsEndpoint {}

const Mistyped = defineEntity({
  name: 'MistypedThing',
  table: 'broken_things',
  schema: Type.Object({ id: Type.Integer(), name: Type.Integer() }),
  writable: ['name'],
});
@AutoCrud(Mistyped)
class MistypedThingsEndpoint {}

// The docs' own replacement of the generated GET {id} (docs/autocrud.md, "A hand-written route
// wins"), and a replacement that is public on purpose.
@AutoCrud(Product)
class ReplacedProductEndpoint {
  addRoutes(app: FastifyInstance) {
    app.get<{ Params: { id: string } }>('{id}', async (request, reply) => {
      const product = await app.kit.services
        .resolve<KitAutoCrud>(KIT_AUTOCRUD)
        .repository(Product)
        .get(Number(request.params.id));
      return product ? { ...product, priceWithVat: product.price * 1.2 } : reply.code(404).send();
    });
    app.delete('{id}', { config: { kitPublic: true } }, async (_request, reply) =>
      reply.code(405).send(),
    );
  }
}

const Ghost = defineEntity({
  name: 'Ghost',
  table: 'ghosts',
  schema: Type.Object({ id: Type.Integer(), name: Type.String() }),
  writable: ['name'],
});
@AutoCrud(Ghost)
class GhostsEndpoint {}

async function startupError(
  engine: EngineUnderTest,
  endpoint: new () => object,
  createTables: boolean,
): Promise<Error & { code?: string }> {
  const app = Fastify();
  addKit(app, [endpoint]);
  addKitAutoCrud(app, engine.connection, { createTables });
  try {
    await useKit(app);
    await app.ready();
  } catch (err) {
    await app.close().catch(() => undefined);
    return err as Error & { code?: string };
  }
  await app.close();
  assert.fail('start-up did not fail');
}

export function startupSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud start-up and options on ${engine.name}`, () => {
    before(async () => {
      for (const statement of suiteTables(engine.flavour)) await engine.sql(statement);
      await engine.sql('create table broken_things (id integer primary key, name text)');
    });

    it('a missing table fails start-up naming it (without createTables)', async () => {
      const err = await startupError(engine, GhostsEndpoint, false);
      assert.equal(err.code, 'KIT_ERR_AUTOCRUD_SCHEMA');
      assert.match(
        err.message,
        /Table 'ghosts' \(entity Ghost\) does not exist.*createTables: true/,
      );
    });

    it('a missing column fails start-up naming the table and the column, even with createTables', async () => {
      const err = await startupError(engine, BrokenThingsEndpoint, true);
      assert.equal(err.code, 'KIT_ERR_AUTOCRUD_SCHEMA');
      assert.match(
        err.message,
        /Table 'broken_things' has no column 'weight' \(entity BrokenThing, field weight\)/,
      );
    });

    it('a column that cannot hold the field type fails start-up naming both', async () => {
      const err = await startupError(engine, MistypedThingsEndpoint, false);
      assert.equal(err.code, 'KIT_ERR_AUTOCRUD_SCHEMA');
      assert.match(
        err.message,
        /Column 'broken_things\.name' is \w+, which cannot hold field MistypedThing\.name of type integer/,
      );
    });

    describe('requireAuthorization', () => {
      let authority: TestAuthority;
      let app: FastifyInstance;
      before(async () => {
        authority = await TestAuthority.start();
        app = await crudApp(
          engine,
          { requireAuthorization: true, idempotency: true },
          (opt) => opt.configureJwt(authority.url, [AUDIENCE]),
          [ProductEndpoint],
        );
      });
      after(async () => {
        await app?.close();
        await authority?.stop();
      });

      it('every generated route answers 401 without a bearer token and changes nothing; with one it works', async () => {
        for (const [method, url] of [
          ['GET', '/api/product'],
          ['GET', '/api/product/all'],
          ['GET', '/api/product/1'],
          ['POST', '/api/product'],
          ['PUT', '/api/product/1'],
          ['DELETE', '/api/product/1'],
        ] as const) {
          const res = await app.inject({
            method,
            url,
            ...(method === 'POST' || method === 'PUT'
              ? { payload: { name: 'sneaky', price: 1 } }
              : {}),
          });
          assert.equal(res.statusCode, 401, `${method} ${url}: ${res.body}`);
          assert.match(String(res.headers['www-authenticate']), /^Bearer/);
        }
        const headers = { authorization: `Bearer ${await authority.sign()}` };
        assert.equal(
          (await app.inject({ url: '/api/product?filter[name]=sneaky', headers })).json<{
            total: number;
          }>().total,
          0,
        );
        const created = await app.inject({
          method: 'POST',
          url: '/api/product',
          headers,
          payload: { name: 'signed', price: 1 },
        });
        assert.equal(created.statusCode, 201, created.body);
      });

      it("an Idempotency-Key is the caller's own: another user with the same key creates (and is not replayed the first user's answer)", async () => {
        const key = 'shared-key-1';
        const alice = {
          authorization: `Bearer ${await authority.sign({ claims: { sub: 'alice' } })}`,
          'idempotency-key': key,
        };
        const bob = {
          authorization: `Bearer ${await authority.sign({ claims: { sub: 'bob' } })}`,
          'idempotency-key': key,
        };
        const first = await app.inject({
          method: 'POST',
          url: '/api/product',
          headers: alice,
          payload: { name: 'alice-1', price: 1 },
        });
        assert.equal(first.headers['idempotent-replayed'], 'false', first.body);
        const other = await app.inject({
          method: 'POST',
          url: '/api/product',
          headers: bob,
          payload: { name: 'bob-1', price: 1 },
        });
        assert.equal(other.statusCode, 201, other.body);
        assert.equal(other.headers['idempotent-replayed'], 'false');
        const again = await app.inject({
          method: 'POST',
          url: '/api/product',
          headers: alice,
          payload: { name: 'alice-1', price: 1 },
        });
        assert.equal(again.headers['idempotent-replayed'], 'true');
        assert.deepEqual(again.json(), first.json());
      });

      it("an Idempotency-Key of a token without sub is the client's own (azp, else client_id); a token naming no caller is refused with a 400, nothing created", async () => {
        const post = async (claims: Record<string, unknown>, key: string, name: string) =>
          app.inject({
            method: 'POST',
            url: '/api/product',
            headers: {
              authorization: `Bearer ${await authority.sign({ claims: { sub: undefined, ...claims } })}`,
              'idempotency-key': key,
            },
            payload: { name, price: 1 },
          });
        const key = 'client-credentials-key';
        const first = await post({ azp: 'billing-service' }, key, 'cc-billing');
        assert.equal(first.statusCode, 201, first.body);
        assert.equal(first.headers['idempotent-replayed'], 'false');
        // Another client, same key and same body: its own create, not the first client's answer.
        for (const [claims, name] of [
          [{ azp: 'reports-service' }, 'cc-reports'],
          [{ client_id: 'exports-service' }, 'cc-exports'],
          [{ client_id: 'billing-service', azp: 'other-service' }, 'cc-other'],
        ] as const) {
          const other = await post(claims, key, name);
          assert.equal(other.statusCode, 201, other.body);
          assert.equal(
            other.headers['idempotent-replayed'],
            'false',
            `${JSON.stringify(claims)} is another caller`,
          );
          assert.equal(other.json<{ name: string }>().name, name);
        }
        // The same client again (a new token, azp or client_id alike): the first answer, replayed.
        const again = await post({ azp: 'billing-service' }, key, 'cc-billing');
        assert.equal(again.headers['idempotent-replayed'], 'true');
        assert.deepEqual(again.json(), first.json());
        assert.equal(
          (await post({ client_id: 'billing-service' }, key, 'cc-billing')).headers[
            'idempotent-replayed'
          ],
          'true',
        );
        // A user whose subject equals a client's id is another caller still.
        const user = await post({ sub: 'billing-service' }, key, 'cc-user');
        assert.equal(user.headers['idempotent-replayed'], 'false', user.body);
        // A token naming no caller: 400 naming the header; without the header the create runs.
        const anonymous = await post({}, key, 'cc-nobody');
        assert.equal(anonymous.statusCode, 400, anonymous.body);
        assert.equal(
          anonymous.json<{ errors: Array<{ in: string; name: string }> }>().errors[0]?.name,
          'Idempotency-Key',
        );
        assert.match(anonymous.json<{ detail: string }>().detail, /no sub, azp or client_id/);
        const headers = {
          authorization: `Bearer ${await authority.sign({ claims: { sub: undefined } })}`,
        };
        assert.equal(
          (await app.inject({ url: '/api/product?filter[name]=cc-nobody', headers })).json<{
            total: number;
          }>().total,
          0,
        );
        assert.equal(
          (
            await app.inject({
              method: 'POST',
              url: '/api/product',
              headers,
              payload: { name: 'cc-nobody', price: 1 },
            })
          ).statusCode,
          201,
        );
      });

      it('the document declares the bearer scheme and the 401 answer on every generated operation', async () => {
        const doc = (await app.inject('/openapi.json')).json<{
          paths: Record<
            string,
            Record<string, { security?: unknown; responses: Record<string, unknown> }>
          >;
        }>();
        for (const [path, item] of Object.entries(doc.paths).filter(([p]) =>
          p.startsWith('/api/product'),
        )) {
          for (const [method, op] of Object.entries(item)) {
            assert.deepEqual(op.security, [{ bearerAuth: [] }], `${method} ${path}`);
            assert.ok(op.responses['401'], `${method} ${path} documents 401`);
          }
        }
      });
    });

    it('a hand-written replacement of a generated route keeps its guard under requireAuthorization (and the document says so), unless it opts out with config.kitPublic', async () => {
      const authority = await TestAuthority.start();
      const app = await crudApp(
        engine,
        { requireAuthorization: true },
        (opt) => opt.configureJwt(authority.url, [AUDIENCE]),
        [ReplacedProductEndpoint],
      );
      try {
        const headers = { authorization: `Bearer ${await authority.sign()}` };
        const created = await app.inject({
          method: 'POST',
          url: '/api/replacedProduct',
          headers,
          payload: { name: 'replaced', price: 10 },
        });
        assert.equal(created.statusCode, 201, created.body);
        const url = `/api/replacedProduct/${created.json<{ id: number }>().id}`;
        const anonymous = await app.inject(url);
        assert.equal(anonymous.statusCode, 401, anonymous.body);
        assert.match(String(anonymous.headers['www-authenticate']), /^Bearer/);
        assert.equal((await app.inject('/api/replacedProduct')).statusCode, 401, 'as the list');
        const signed = await app.inject({ url, headers });
        assert.equal(signed.statusCode, 200, signed.body);
        assert.equal(
          signed.json<{ priceWithVat: number }>().priceWithVat,
          12,
          'the hand-written route answered',
        );
        assert.equal(
          (await app.inject({ method: 'DELETE', url })).statusCode,
          405,
          'the opt-out is public',
        );
        const doc = (await app.inject('/openapi.json')).json<{
          paths: Record<
            string,
            Record<string, { security?: unknown; responses: Record<string, unknown> }>
          >;
        }>();
        const item = doc.paths['/api/replacedProduct/{id}'];
        assert.deepEqual(item?.get?.security, [{ bearerAuth: [] }]);
        assert.ok(item?.get?.responses['401'], 'the replacement documents 401');
        assert.deepEqual(item?.put?.security, [{ bearerAuth: [] }]);
        assert.equal(item?.delete?.security, undefined, 'the opt-out declares no requirement');
      } finally {
        await app.close();
        await authority.stop();
      }
    });

    it('requireAuthorization without configureJwt fails start-up with KIT_ERR_JWT_NOT_CONFIGURED', async () => {
      const app = Fastify();
      addKit(app, [ProductEndpoint]);
      addKitAutoCrud(app, engine.connection, { requireAuthorization: true });
      await assert.rejects(useKit(app), { code: 'KIT_ERR_JWT_NOT_CONFIGURED' });
      await app.close();
    });

    it('instances starting at once with createTables each start clean and serve at once, many rounds', async (t) => {
      if (engine.name === 'PGlite')
        return t.skip('one session: the instances share it, so no two CREATE TABLE run at once');
      // Separate apps, so separate sessions: what collides is the sessions' CREATE TABLE IF NOT
      // EXISTS (PostgreSQL fails one of two with 23505), and apps in one process reach it within a
      // millisecond of each other, where processes spread over their own start.
      for (let round = 0; round < 6; round++) {
        const Thing = defineEntity({
          name: 'RaceThing',
          table: `race_things_${round}`,
          schema: Type.Object({ id: Type.Integer(), code: Type.String(), name: Type.String() }),
          writable: ['code', 'name'],
          unique: [['code']],
        });
        @AutoCrud(Thing)
        class RaceThingsEndpoint {}
        const lines: string[] = [];
        const stream = new Writable({
          write(chunk: Buffer, _encoding, done) {
            lines.push(chunk.toString());
            done();
          },
        });
        const apps = Array.from({ length: 6 }, () => {
          const app = Fastify({ logger: { level: 'warn', stream } });
          addKit(app, [RaceThingsEndpoint]);
          addKitAutoCrud(app, engine.connection, { createTables: true });
          return app;
        });
        try {
          const started = await Promise.allSettled(
            apps.map(async (app) => {
              await useKit(app);
              await app.ready();
            }),
          );
          assert.deepEqual(
            started.flatMap((s) => (s.status === 'rejected' ? [String(s.reason)] : [])),
            [],
            `round ${round}`,
          );
          // At once: an instance whose start met the database unavailable answers 503 for a while.
          const created = await Promise.all(
            apps.map((app, i) =>
              app.inject({
                method: 'POST',
                url: '/api/raceThings',
                payload: { code: `c${i}`, name: 'n' },
              }),
            ),
          );
          for (const res of created)
            assert.equal(res.statusCode, 201, `round ${round}: ${res.body}`);
          assert.deepEqual(
            lines.filter((l) => /not reachable|unavailable/.test(l)),
            [],
            `round ${round}: an instance saw the database unavailable`,
          );
        } finally {
          await Promise.all(apps.map((app) => app.close()));
        }
      }
    });

    it('without requireAuthorization, start-up warns that the generated routes are open', async () => {
      const lines: string[] = [];
      const stream = new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(chunk.toString());
          done();
        },
      });
      const app = Fastify({ logger: { level: 'warn', stream } });
      addKit(app, [ProductEndpoint]);
      addKitAutoCrud(app, engine.connection);
      await useKit(app);
      await app.ready();
      await app.close();
      const warning = lines
        .map((l) => JSON.parse(l) as { level: number; msg: string })
        .find((l) => /require no authentication/.test(l.msg));
      assert.ok(warning, lines.join(''));
      assert.equal(warning.level, 40);
      assert.match(warning.msg, /ProductEndpoint \(\/api\/product\).*requireAuthorization: true/);
    });
  });
}
