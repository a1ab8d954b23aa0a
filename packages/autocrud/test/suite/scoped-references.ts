// A write naming a parent that the caller's scope restricts, racing a change that takes the parent
// out of that scope, on one engine. The write checks the parent inside its scope and locks it until
// it commits (FOR SHARE on PostgreSQL and PGlite, the write lock on SQLite; see docs/decisions.md,
// "AutoCrud relations"), so the owner change either waits for the write or the write sees the new
// owner and is refused: never a child committed under a parent its caller could no longer name.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { TestAuthority } from '@kit/test-support/jwt-authority';
import { relationsFixture, type RelationCallers } from './authorization-relations.ts';
import type { EngineSession, EngineUnderTest } from './fixtures.ts';

const ROUNDS = 40;

export function scopedReferenceRaceSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud scoped references racing a change of scope on ${engine.name}`, () => {
    let authority: TestAuthority;
    let app: FastifyInstance;
    let as: RelationCallers;
    let items: { aliceInA1: number };
    let session: EngineSession;

    before(async () => {
      authority = await TestAuthority.start();
      ({ app, as, items } = await relationsFixture(engine, authority));
      assert.ok(
        engine.session,
        `${engine.name} opens no session of its own (EngineUnderTest.session)`,
      );
      session = await engine.session();
    });
    after(async () => {
      await session?.close();
      await app?.close();
      await authority?.stop();
      await engine.sql('drop table if exists authz_items');
      await engine.sql('drop table if exists authz_baskets');
    });

    it(`a create or PATCH naming a basket of the caller's racing its hand-over to another owner: refused, or committed before it; never after (${ROUNDS} rounds)`, async () => {
      const outcomes = { written: 0, refused: 0 };
      const send = (options: InjectOptions) => app.inject({ ...options, headers: as.alice });
      // An item of alice's that a PATCH moves to each round's basket, racing like a create.
      const moved = items.aliceInA1;
      for (let round = 0; round < ROUNDS; round++) {
        const made = await app.inject({
          method: 'POST',
          url: '/api/authBaskets',
          headers: as.root,
          payload: { code: `race-${round}`, label: 'race', ownerId: 'alice' },
        });
        assert.equal(made.statusCode, 201, made.body);
        const basket = made.json<{ id: number }>().id;
        const create = (n: number) => () =>
          send({
            method: 'POST',
            url: '/api/authItems',
            payload: { basketId: basket, sku: `race-${round}-${n}` },
          });
        const move = () =>
          send({ method: 'PATCH', url: `/api/authItems/${moved}`, payload: { basketId: basket } });
        // Another session hands the basket over to bob, then reads (after its UPDATE, before its
        // COMMIT) the items that refer to it: those committed before the hand-over.
        const handOver = () =>
          session.transaction([
            `update authz_baskets set owner_id = 'bob', version = version + 1 where id = ${basket}`,
            `select id from authz_items where basket_id = ${basket} order by id`,
          ]);
        // By round, the hand-over starts up to 3 ms before the writes, with them, or up to 3 ms
        // after them: some rounds see it win, others a write.
        const lead = (round % 7) - 3;
        const later = <T>(ms: number, request: () => Promise<T>) =>
          ms > 0 ? sleep(ms).then(request) : request();
        const [handed, ...writes] = (await Promise.all([
          later(lead, handOver),
          later(-lead, create(1)),
          later(-lead, move),
          later(-lead, create(2)),
        ])) as [Array<Array<Record<string, unknown>>>, ...LightMyRequestResponse[]];
        const seen = (handed[1] ?? []).map((row) => Number(row.id));
        const written: number[] = [];
        for (const res of writes) {
          assert.ok(
            res.statusCode === 201 || res.statusCode === 200 || res.statusCode === 422,
            `round ${round}: ${res.statusCode} ${res.body}`,
          );
          if (res.statusCode === 422) {
            assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
            assert.equal(
              res.json<{ errors: Array<{ name: string }> }>().errors[0]?.name,
              'basketId',
              res.body,
            );
            outcomes.refused += 1;
          } else {
            written.push(res.json<{ id: number }>().id);
            outcomes.written += 1;
          }
        }
        // Every item referring to the basket now was committed before the hand-over: the hand-over's own read saw it.
        const committed = (
          await engine.sql(`select id from authz_items where basket_id = ${basket} order by id`)
        ).map((row) => Number(row.id));
        assert.deepEqual(
          committed,
          seen,
          `round ${round}: items committed under a basket alice no longer owned (seen by the hand-over: ${JSON.stringify(seen)})`,
        );
        assert.deepEqual(
          [...written].sort((a, b) => a - b),
          committed,
          `round ${round}: the writes answered 2xx are not the items that refer to the basket`,
        );
      }
      // Both outcomes must have happened, or the race was not run.
      assert.ok(outcomes.written > 0 && outcomes.refused > 0, JSON.stringify(outcomes));
    });
  });
}
