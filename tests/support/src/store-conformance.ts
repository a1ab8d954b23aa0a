// The one conformance suite every store implementation runs (memory in core, Redis in
// @kit/store-redis). It is a function, not a test file: each package calls it with a way to
// connect to its backing store.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it, type TestContext } from 'node:test';
import {
  KitError,
  SagaConflictError,
  type ICronJobStore,
  type IIdempotencyStore,
  type IRateLimitStore,
  type ISagaStore,
  type JsonValue,
  type RateLimitOptions,
} from '@kit/core';

/**
 * True when more than `ttlMs` passed since `since` (performance.now() before a write with that
 * TTL): a check that "it is still there" then proves nothing, since on a loaded machine a pause
 * that long makes "it lapsed" a right answer too. Said in a diagnostic, so a run shows it.
 */
function lapsedMeanwhile(t: TestContext, ttlMs: number, since: number): boolean {
  const elapsed = Math.round(performance.now() - since);
  if (elapsed < ttlMs) return false;
  t.diagnostic(
    `${elapsed} ms passed between the write with a ${ttlMs} ms TTL and the check that it still held: not asserted`,
  );
  return true;
}

/** One connection to the backing store: the four stores, and how to let go of them. */
export interface StoreSet {
  idempotency: IIdempotencyStore;
  rateLimit: IRateLimitStore;
  saga: ISagaStore;
  cronJob: ICronJobStore;
  close?(): Promise<void>;
}

export interface ConformanceOptions {
  /**
   * Returns a handle on the SAME backing store each time it is called (the memory run returns one
   * shared set; the Redis run opens a new connection to the same server). The suite connects
   * twice and spreads concurrent calls over both, as two service instances would.
   */
  connect: () => Promise<StoreSet>;
  /** Runs before the first connect (e.g. start a server). */
  before?: () => Promise<void>;
  /** Runs after the last close. */
  after?: () => Promise<void>;
  /** A reason to skip the whole suite, reported as such. */
  skip?: string | false;
}

type Code = { code?: string };

async function rejectsWithCode(promise: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(promise, (err: Error & Code) => {
    assert.ok(err instanceof KitError, `expected a KitError, got ${String(err)}`);
    assert.equal(err.code, code);
    return true;
  });
}

async function conflict(
  promise: Promise<unknown>,
  expected: number,
  actual: number | undefined,
): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof SagaConflictError, `expected SagaConflictError, got ${String(err)}`);
    assert.equal(err.code, 'KIT_ERR_SAGA_CONFLICT');
    assert.equal(err.statusCode, 409);
    assert.equal(err.expectedVersion, expected);
    assert.equal(err.actualVersion, actual);
    return true;
  });
}

function count<T>(values: readonly T[], predicate: (v: T) => boolean): number {
  return values.filter(predicate).length;
}

/** Runs the store contract against the stores `options.connect` returns. */
export function storeConformance(label: string, options: ConformanceOptions): void {
  const { skip } = options;
  if (skip) {
    // One skipped test (not a skipped suite) so the run's summary counts it under "skipped".
    it(`store conformance: ${label}`, (t) => t.skip(skip));
    return;
  }
  describe(`store conformance: ${label}`, () => {
    let a: StoreSet;
    let b: StoreSet;
    // Keys are unique per test so the suite can share one server with anything else.
    const k = (name: string) => `conf:${randomUUID()}:${name}`;

    before(async () => {
      await options.before?.();
      a = await options.connect();
      b = await options.connect();
    });
    after(async () => {
      await a?.close?.();
      await b?.close?.();
      await options.after?.();
    });

    describe('IIdempotencyStore', () => {
      it('first writer reserves; others see pending with a retry hint, then the stored response', async () => {
        const key = k('idem');
        const first = await a.idempotency.reserve(key, { ttlMs: 5000 });
        assert.equal(first.outcome, 'reserved');
        assert.ok(first.outcome === 'reserved' && first.token.length > 0);
        const second = await b.idempotency.reserve(key, { ttlMs: 5000 });
        assert.equal(second.outcome, 'pending');
        assert.ok(
          second.outcome === 'pending' && second.retryAfterMs > 0 && second.retryAfterMs <= 5000,
          JSON.stringify(second),
        );

        const response = {
          statusCode: 201,
          body: { id: 'p_1', amounts: [1, 2.5, -3], note: 'ünïcödé ✓', none: null, ok: true },
        };
        assert.equal(
          await a.idempotency.complete(key, first.token, response, { ttlMs: 5000 }),
          true,
        );
        response.body.id = 'mutated after complete';
        const replay = await b.idempotency.reserve(key, { ttlMs: 5000 });
        assert.deepEqual(replay, {
          outcome: 'completed',
          response: {
            statusCode: 201,
            body: { id: 'p_1', amounts: [1, 2.5, -3], note: 'ünïcödé ✓', none: null, ok: true },
          },
        });
        // A second completion, even by the first writer, changes nothing.
        assert.equal(
          await a.idempotency.complete(key, first.token, { other: true }, { ttlMs: 5000 }),
          false,
        );
        assert.deepEqual((await a.idempotency.reserve(key, { ttlMs: 5000 })).outcome, 'completed');
      });

      it('exactly one of 40 concurrent reservations (over two connections) wins', async () => {
        const key = k('race');
        const results = await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            (i % 2 ? a : b).idempotency.reserve(key, { ttlMs: 5000 }),
          ),
        );
        assert.equal(
          count(results, (r) => r.outcome === 'reserved'),
          1,
        );
        assert.equal(
          count(results, (r) => r.outcome === 'pending'),
          39,
        );
      });

      it('only the holder token completes or releases; release frees the key', async () => {
        const key = k('release');
        const first = await a.idempotency.reserve(key, { ttlMs: 5000 });
        assert.ok(first.outcome === 'reserved');
        assert.equal(await b.idempotency.complete(key, 'not-the-token', 1, { ttlMs: 5000 }), false);
        assert.equal(await b.idempotency.release(key, 'not-the-token'), false);
        assert.equal((await b.idempotency.reserve(key, { ttlMs: 5000 })).outcome, 'pending');
        assert.equal(await a.idempotency.release(key, first.token), true);
        assert.equal(await a.idempotency.release(key, first.token), false);
        const again = await b.idempotency.reserve(key, { ttlMs: 5000 });
        assert.ok(again.outcome === 'reserved');
        assert.notEqual(again.token, first.token);
        assert.equal(await a.idempotency.complete(key, first.token, 1, { ttlMs: 5000 }), false);
        assert.equal(await b.idempotency.complete(key, again.token, 'done', { ttlMs: 5000 }), true);
        // A completed record cannot be released.
        assert.equal(await b.idempotency.release(key, again.token), false);
        assert.deepEqual(await a.idempotency.reserve(key, { ttlMs: 5000 }), {
          outcome: 'completed',
          response: 'done',
        });
        assert.equal(
          await a.idempotency.complete(k('never-reserved'), first.token, 1, { ttlMs: 5000 }),
          false,
        );
      });

      it('a lapsed reservation can be taken over and the old token can no longer complete; responses lapse too', async (t) => {
        const key = k('lapse');
        const first = await a.idempotency.reserve(key, { ttlMs: 150 });
        assert.ok(first.outcome === 'reserved');
        await sleep(250);
        const second = await b.idempotency.reserve(key, { ttlMs: 5000 });
        assert.ok(second.outcome === 'reserved');
        assert.equal(
          await a.idempotency.complete(key, first.token, 'late', { ttlMs: 5000 }),
          false,
        );
        const completedAt = performance.now();
        assert.equal(
          await b.idempotency.complete(key, second.token, 'kept briefly', { ttlMs: 150 }),
          true,
        );
        const kept = (await a.idempotency.reserve(key, { ttlMs: 5000 })).outcome;
        if (lapsedMeanwhile(t, 150, completedAt)) return;
        assert.equal(kept, 'completed');
        await sleep(250);
        assert.equal((await a.idempotency.reserve(key, { ttlMs: 5000 })).outcome, 'reserved');
      });

      it('a different fingerprint on the same key is a mismatch; the same or none is not', async () => {
        const key = k('fp');
        const first = await a.idempotency.reserve(key, { ttlMs: 5000, fingerprint: 'sha256:aaa' });
        assert.ok(first.outcome === 'reserved');
        assert.deepEqual(
          await b.idempotency.reserve(key, { ttlMs: 5000, fingerprint: 'sha256:bbb' }),
          { outcome: 'mismatch' },
        );
        assert.equal(
          (await b.idempotency.reserve(key, { ttlMs: 5000, fingerprint: 'sha256:aaa' })).outcome,
          'pending',
        );
        assert.equal((await b.idempotency.reserve(key, { ttlMs: 5000 })).outcome, 'pending');
        await a.idempotency.complete(key, first.token, [1], { ttlMs: 5000 });
        assert.deepEqual(
          await b.idempotency.reserve(key, { ttlMs: 5000, fingerprint: 'sha256:bbb' }),
          { outcome: 'mismatch' },
        );
        assert.deepEqual(
          await b.idempotency.reserve(key, { ttlMs: 5000, fingerprint: 'sha256:aaa' }),
          { outcome: 'completed', response: [1] },
        );
      });

      it('refuses invalid arguments with KIT_ERR_STORE_INVALID_ARGUMENT', async () => {
        const code = 'KIT_ERR_STORE_INVALID_ARGUMENT';
        await rejectsWithCode(a.idempotency.reserve('', { ttlMs: 1000 }), code);
        await rejectsWithCode(a.idempotency.reserve('x'.repeat(1025), { ttlMs: 1000 }), code);
        await rejectsWithCode(a.idempotency.reserve(k('bad'), { ttlMs: 0 }), code);
        await rejectsWithCode(a.idempotency.reserve(k('bad'), { ttlMs: 1.5 }), code);
        await rejectsWithCode(
          a.idempotency.reserve(k('bad'), { ttlMs: 1000, fingerprint: '' }),
          code,
        );
        const key = k('bad-json');
        const r = await a.idempotency.reserve(key, { ttlMs: 1000 });
        assert.ok(r.outcome === 'reserved');
        await rejectsWithCode(
          a.idempotency.complete(key, r.token, { n: 1n } as unknown as JsonValue, { ttlMs: 1000 }),
          code,
        );
        await rejectsWithCode(
          a.idempotency.complete(key, r.token, undefined as unknown as JsonValue, { ttlMs: 1000 }),
          code,
        );
        await rejectsWithCode(a.idempotency.complete(key, '', 1, { ttlMs: 1000 }), code);
        // Nothing was stored by the refused calls.
        assert.equal(await a.idempotency.complete(key, r.token, 'fine', { ttlMs: 1000 }), true);
      });
    });

    describe('IRateLimitStore', () => {
      const fixed = (
        limit: number,
        windowMs: number,
        extra: Partial<RateLimitOptions> = {},
      ): RateLimitOptions => ({ limit, windowMs, ...extra });
      const sliding = (
        limit: number,
        windowMs: number,
        extra: Partial<RateLimitOptions> = {},
      ): RateLimitOptions => ({
        limit,
        windowMs,
        algorithm: 'sliding-window',
        ...extra,
      });

      for (const algorithm of ['fixed-window', 'sliding-window'] as const) {
        const opts = algorithm === 'fixed-window' ? fixed : sliding;

        it(`${algorithm}: admits limit, then refuses with remaining 0 and a retry hint; a refusal counts nothing`, async () => {
          const key = k('rl');
          const start = Date.now();
          const results = [];
          for (let i = 0; i < 4; i++)
            results.push(await (i % 2 ? a : b).rateLimit.consume(key, opts(3, 2000)));
          assert.deepEqual(
            results.map((r) => [r.allowed, r.remaining, r.limit]),
            [
              [true, 2, 3],
              [true, 1, 3],
              [true, 0, 3],
              [false, 0, 3],
            ],
          );
          const refused = results[3]!;
          assert.ok(
            refused.retryAfterMs > 0 && refused.retryAfterMs <= 2000,
            `retryAfterMs ${refused.retryAfterMs}`,
          );
          assert.ok(
            refused.resetAt >= start && refused.resetAt <= Date.now() + 2000 + 50,
            `resetAt ${refused.resetAt}`,
          );
          assert.equal(results[0]!.retryAfterMs, 0);
          // cost 0 reads without counting; refusals did not eat into the window.
          const peek = await a.rateLimit.consume(key, opts(3, 2000, { cost: 0 }));
          assert.deepEqual([peek.allowed, peek.remaining], [true, 0]);
          await a.rateLimit.reset(key);
          const fresh = await b.rateLimit.consume(key, opts(3, 2000));
          assert.deepEqual([fresh.allowed, fresh.remaining], [true, 2]);
        });

        it(`${algorithm}: exactly limit of 60 concurrent calls over two connections are admitted`, async () => {
          const key = k('rl-race');
          const results = await Promise.all(
            Array.from({ length: 60 }, (_, i) =>
              (i % 2 ? a : b).rateLimit.consume(key, opts(25, 10_000)),
            ),
          );
          assert.equal(
            count(results, (r) => r.allowed),
            25,
          );
          assert.deepEqual(
            results
              .filter((r) => r.allowed)
              .map((r) => r.remaining)
              .sort((x, y) => x - y),
            Array.from({ length: 25 }, (_, i) => i),
          );
        });

        it(`${algorithm}: cost counts several units; a call that does not fit is refused whole`, async () => {
          const key = k('rl-cost');
          const r1 = await a.rateLimit.consume(key, opts(5, 5000, { cost: 3 }));
          assert.deepEqual([r1.allowed, r1.remaining], [true, 2]);
          const r2 = await b.rateLimit.consume(key, opts(5, 5000, { cost: 3 }));
          assert.deepEqual([r2.allowed, r2.remaining], [false, 2]);
          assert.ok(r2.retryAfterMs > 0);
          const r3 = await a.rateLimit.consume(key, opts(5, 5000, { cost: 2 }));
          assert.deepEqual([r3.allowed, r3.remaining], [true, 0]);
        });

        it(`${algorithm}: nothing counted means remaining = limit and resetAt = now`, async () => {
          const r = await a.rateLimit.consume(k('rl-empty'), opts(4, 5000, { cost: 0 }));
          assert.deepEqual([r.allowed, r.remaining, r.retryAfterMs], [true, 4, 0]);
          assert.ok(
            Math.abs(r.resetAt - Date.now()) < 1000,
            `resetAt ${r.resetAt} vs now ${Date.now()}`,
          );
        });
      }

      it('fixed-window: the whole window is freed at once when it ends', async () => {
        const key = k('fixed-reset');
        await a.rateLimit.consume(key, fixed(2, 400));
        await sleep(200);
        await a.rateLimit.consume(key, fixed(2, 400));
        const refused = await b.rateLimit.consume(key, fixed(2, 400));
        assert.equal(refused.allowed, false);
        assert.ok(
          refused.retryAfterMs <= 220,
          `the window started with the first unit: retryAfterMs ${refused.retryAfterMs}`,
        );
        await sleep(refused.retryAfterMs + 30);
        const again = await b.rateLimit.consume(key, fixed(2, 400));
        assert.deepEqual([again.allowed, again.remaining], [true, 1]);
      });

      it('sliding-window: units leave one by one, windowMs after each was counted', async () => {
        const key = k('sliding');
        await a.rateLimit.consume(key, sliding(2, 600));
        await sleep(300);
        await a.rateLimit.consume(key, sliding(2, 600));
        // The second unit was counted by now: it leaves at most windowMs after this (a bound that
        // holds however long the sleeps above really took on a loaded machine).
        const secondCountedBy = Date.now();
        const refused = await b.rateLimit.consume(key, sliding(2, 600));
        assert.equal(refused.allowed, false);
        assert.ok(
          refused.retryAfterMs > 0 && refused.retryAfterMs <= 320,
          `first unit leaves ~300 ms from now: ${refused.retryAfterMs}`,
        );
        await sleep(refused.retryAfterMs + 30);
        // The first unit left; the second still counts, so exactly one more fits.
        const one = await b.rateLimit.consume(key, sliding(2, 600));
        assert.deepEqual([one.allowed, one.remaining], [true, 0]);
        const asked = Date.now();
        const two = await b.rateLimit.consume(key, sliding(2, 600));
        assert.equal(two.allowed, false);
        const bound = secondCountedBy + 600 - asked;
        assert.ok(
          two.retryAfterMs > 0 && two.retryAfterMs <= bound + 5,
          `second unit leaves within ${bound} ms: ${two.retryAfterMs}`,
        );
        assert.ok(
          two.resetAt <= secondCountedBy + 600 + 5,
          'resetAt: when the oldest counted unit leaves',
        );
      });

      it('refuses invalid options with KIT_ERR_STORE_INVALID_ARGUMENT', async () => {
        const code = 'KIT_ERR_STORE_INVALID_ARGUMENT';
        const key = k('rl-bad');
        await rejectsWithCode(a.rateLimit.consume(key, fixed(0, 1000)), code);
        await rejectsWithCode(a.rateLimit.consume(key, fixed(1, 0)), code);
        await rejectsWithCode(a.rateLimit.consume(key, fixed(2, 1000, { cost: 3 })), code);
        await rejectsWithCode(a.rateLimit.consume(key, fixed(2, 1000, { cost: -1 })), code);
        await rejectsWithCode(
          a.rateLimit.consume(key, {
            limit: 2,
            windowMs: 1000,
            algorithm: 'token-bucket' as 'fixed-window',
          }),
          code,
        );
        await rejectsWithCode(a.rateLimit.consume('', fixed(2, 1000)), code);
        await rejectsWithCode(a.rateLimit.reset(''), code);
        // The sliding window keeps a timestamp per unit: its limit is capped, and a full-cost call works.
        await rejectsWithCode(
          a.rateLimit.consume(key, { limit: 10_001, windowMs: 1000, algorithm: 'sliding-window' }),
          code,
        );
        const big = await a.rateLimit.consume(k('rl-big'), {
          limit: 10_000,
          windowMs: 1000,
          algorithm: 'sliding-window',
          cost: 10_000,
        });
        assert.equal(big.allowed, true);
        assert.equal(big.remaining, 0);
      });
    });

    describe('ISagaStore', () => {
      it('create is version 1; get returns a fresh copy; a second create conflicts', async () => {
        const id = k('saga');
        const before = Date.now();
        const created = await a.saga.create(id, { step: 'reserve', items: [{ sku: 'A', qty: 2 }] });
        assert.deepEqual(
          { ...created, updatedAt: 0 },
          {
            id,
            version: 1,
            data: { step: 'reserve', items: [{ sku: 'A', qty: 2 }] },
            updatedAt: 0,
          },
        );
        assert.ok(created.updatedAt >= before - 1000 && created.updatedAt <= Date.now() + 1000);
        const got = await b.saga.get<{ step: string; items: Array<{ sku: string; qty: number }> }>(
          id,
        );
        assert.deepEqual(got, created);
        got!.data.step = 'mutated';
        assert.equal((await b.saga.get<{ step: string }>(id))!.data.step, 'reserve');
        await conflict(b.saga.create(id, { step: 'other' }), 0, 1);
        assert.equal(await a.saga.get(k('missing')), undefined);
      });

      it('update is compare-and-set on the version; a stale or missing version conflicts and writes nothing', async () => {
        const id = k('saga-cas');
        await a.saga.create(id, { step: 1 });
        const v2 = await b.saga.update(id, { step: 2 }, 1);
        assert.equal(v2.version, 2);
        assert.deepEqual(v2.data, { step: 2 });
        await conflict(a.saga.update(id, { step: 'stale' }, 1), 1, 2);
        assert.deepEqual((await a.saga.get(id))!.data, { step: 2 });
        const v3 = await a.saga.update(id, 'plain string data', 2);
        assert.deepEqual([v3.version, v3.data], [3, 'plain string data']);
        await conflict(a.saga.update(k('nope'), { step: 1 }, 1), 1, undefined);
      });

      it('exactly one of 20 concurrent updates from the same version wins', async () => {
        const id = k('saga-race');
        await a.saga.create(id, { winner: null });
        const results = await Promise.allSettled(
          Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).saga.update(id, { winner: i }, 1)),
        );
        const won = results.filter((r) => r.status === 'fulfilled');
        assert.equal(won.length, 1);
        for (const r of results)
          if (r.status === 'rejected') assert.ok(r.reason instanceof SagaConflictError);
        const state = await a.saga.get<{ winner: number }>(id);
        assert.equal(state!.version, 2);
        assert.deepEqual(
          state!.data,
          (won[0] as PromiseFulfilledResult<{ data: JsonValue }>).value.data,
        );
      });

      it('delete checks the version when given and reports whether something was deleted', async () => {
        const id = k('saga-del');
        await a.saga.create(id, 1);
        await b.saga.update(id, 2, 1);
        await conflict(a.saga.delete(id, 1), 1, 2);
        assert.equal(await a.saga.delete(id, 2), true);
        assert.equal(await a.saga.get(id), undefined);
        assert.equal(await b.saga.delete(id), false);
        assert.equal(await b.saga.delete(id, 5), false);
        await a.saga.create(id, 'again');
        assert.equal(await b.saga.delete(id), true);
      });

      it('ttlMs expires the state; update without ttlMs keeps the expiry, with ttlMs replaces it', async () => {
        const gone = k('saga-ttl');
        await a.saga.create(gone, 'short', { ttlMs: 150 });
        await sleep(250);
        assert.equal(await b.saga.get(gone), undefined);
        await a.saga.create(gone, 'recreated after expiry');

        const kept = k('saga-keep');
        await a.saga.create(kept, 1, { ttlMs: 300 });
        await sleep(100);
        await b.saga.update(kept, 2, 1);
        await sleep(300);
        assert.equal(
          await a.saga.get(kept),
          undefined,
          'update without ttlMs kept the 300 ms expiry',
        );

        const extended = k('saga-extend');
        await a.saga.create(extended, 1, { ttlMs: 200 });
        await b.saga.update(extended, 2, 1, { ttlMs: 5000 });
        await sleep(300);
        assert.equal((await a.saga.get(extended))?.version, 2);
      });

      it('refuses invalid arguments with KIT_ERR_STORE_INVALID_ARGUMENT', async () => {
        const code = 'KIT_ERR_STORE_INVALID_ARGUMENT';
        const id = k('saga-bad');
        await rejectsWithCode(a.saga.create('', 1), code);
        await rejectsWithCode(a.saga.create(id, 1, { ttlMs: -5 }), code);
        await rejectsWithCode(a.saga.create(id, (() => 1) as unknown as JsonValue), code);
        await a.saga.create(id, 1);
        await rejectsWithCode(a.saga.update(id, 2, 0), code);
        await rejectsWithCode(a.saga.update(id, 2, 1.5), code);
        await rejectsWithCode(a.saga.delete(id, 0), code);
        assert.equal((await a.saga.get(id))?.version, 1);
      });
    });

    describe('ICronJobStore', () => {
      it('one owner holds the lock; it can re-acquire (extend), others cannot', async () => {
        const job = k('cron');
        assert.equal(await a.cronJob.tryAcquire(job, 'owner-a', 5000), true);
        assert.equal(await b.cronJob.tryAcquire(job, 'owner-b', 5000), false);
        assert.equal(await a.cronJob.tryAcquire(job, 'owner-a', 8000), true);
        const lock = await b.cronJob.getLock(job);
        assert.equal(lock?.owner, 'owner-a');
        assert.ok(
          lock.expiresAt > Date.now() + 6000 && lock.expiresAt <= Date.now() + 8000 + 50,
          `expiresAt ${lock.expiresAt}`,
        );
        assert.equal(await b.cronJob.getLock(k('free')), undefined);
      });

      it('only the owner renews or releases; after release another owner can take it', async () => {
        const job = k('cron-own');
        assert.equal(await a.cronJob.tryAcquire(job, 'owner-a', 1000), true);
        assert.equal(await b.cronJob.renew(job, 'owner-b', 9000), false);
        assert.equal(await b.cronJob.release(job, 'owner-b'), false);
        assert.equal((await a.cronJob.getLock(job))?.owner, 'owner-a');
        assert.equal(await a.cronJob.renew(job, 'owner-a', 9000), true);
        assert.ok(
          (await b.cronJob.getLock(job))!.expiresAt > Date.now() + 8000,
          'renew extended the lock',
        );
        assert.equal(await a.cronJob.release(job, 'owner-a'), true);
        assert.equal(await a.cronJob.release(job, 'owner-a'), false);
        assert.equal(await a.cronJob.renew(job, 'owner-a', 1000), false);
        assert.equal(await b.cronJob.getLock(job), undefined);
        assert.equal(await b.cronJob.tryAcquire(job, 'owner-b', 1000), true);
      });

      it('a lock that was not renewed lapses after its TTL and passes to another owner', async (t) => {
        const job = k('cron-ttl');
        const acquiredAt = performance.now();
        assert.equal(await a.cronJob.tryAcquire(job, 'owner-a', 150), true);
        const taken = await b.cronJob.tryAcquire(job, 'owner-b', 5000);
        if (!lapsedMeanwhile(t, 150, acquiredAt)) assert.equal(taken, false);
        await sleep(250);
        assert.equal(await b.cronJob.tryAcquire(job, 'owner-b', 5000), true);
        assert.equal(await a.cronJob.renew(job, 'owner-a', 5000), false);
        assert.equal(await a.cronJob.release(job, 'owner-a'), false);
        assert.equal((await a.cronJob.getLock(job))?.owner, 'owner-b');
      });

      it('exactly one of 20 concurrent owners acquires', async () => {
        const job = k('cron-race');
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            (i % 2 ? a : b).cronJob.tryAcquire(job, `owner-${i}`, 5000),
          ),
        );
        assert.equal(count(results, Boolean), 1);
        assert.equal((await a.cronJob.getLock(job))?.owner, `owner-${results.indexOf(true)}`);
      });

      it('refuses invalid arguments with KIT_ERR_STORE_INVALID_ARGUMENT', async () => {
        const code = 'KIT_ERR_STORE_INVALID_ARGUMENT';
        await rejectsWithCode(a.cronJob.tryAcquire('', 'o', 1000), code);
        await rejectsWithCode(a.cronJob.tryAcquire(k('j'), '', 1000), code);
        await rejectsWithCode(a.cronJob.tryAcquire(k('j'), 'o', 0), code);
        await rejectsWithCode(a.cronJob.renew(k('j'), 'o', Number.NaN), code);
        await rejectsWithCode(a.cronJob.release(k('j'), ''), code);
        await rejectsWithCode(a.cronJob.getLock(''), code);
      });
    });
  });
}
