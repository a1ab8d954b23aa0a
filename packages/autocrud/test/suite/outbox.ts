// The transactional outbox on one engine, through the generated routes: every committed write is
// one record written in the write's transaction (a failed write none, a record that cannot be
// written fails its write), the in-process subscribers get each record once in commit order per
// row, a delivered record is deleted, a failing subscriber is retried (counted) and a record dead
// after maxAttempts (moved to kit_outbox_dead, counted, shown by the outbox check) lets its row's
// later records go on.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Type } from '@sinclair/typebox';
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify';
import { addKit, useKit } from '@kit/core';
import {
  addKitAutoCrud,
  AutoCrud,
  CrudOperations,
  defineEntity,
  type ChangeMessage,
  type KitAutoCrud,
  type OutboxOptions,
} from '@kit/autocrud';
import type { EngineUnderTest } from './fixtures.ts';
import { until } from '@kit/test-support/until';

const Item = defineEntity({
  name: 'OutboxItem',
  table: 'outbox_items',
  schema: Type.Object({
    id: Type.Integer(),
    name: Type.String({ maxLength: 50 }),
    price: Type.Number(),
    version: Type.Integer(),
    isDeleted: Type.Boolean(),
  }),
  writable: ['name', 'price'],
  version: 'version',
  softDelete: 'isDeleted',
  unique: [['name']],
});
const Memo = defineEntity({
  name: 'OutboxMemo',
  table: 'outbox_memos',
  schema: Type.Object({ id: Type.Integer(), text: Type.String({ maxLength: 50 }) }),
  writable: ['text'],
});

// With the change history too, and a sensitive field.
const Patient = defineEntity({
  name: 'OutboxPatient',
  table: 'outbox_patients',
  schema: Type.Object({
    id: Type.Integer(),
    name: Type.String({ maxLength: 50 }),
    ssn: Type.String({ maxLength: 20 }),
    version: Type.Integer(),
  }),
  writable: ['name', 'ssn'],
  version: 'version',
  history: true,
  redact: ['ssn'],
});

@AutoCrud(Item, { operations: CrudOperations.All | CrudOperations.Patch })
class ItemsEndpoint {}

@AutoCrud(Patient, { operations: CrudOperations.All | CrudOperations.Patch })
class PatientsEndpoint {}

@AutoCrud(Memo, { operations: CrudOperations.All | CrudOperations.Patch })
class MemosEndpoint {}

/** Fast timers: the suite waits for deliveries, not for the defaults. */
const FAST: OutboxOptions = { pollMs: 20, retryBaseMs: 20, retryMaxMs: 80, leaseMs: 2000 };

interface RecordRow {
  seq: number;
  id: string;
  entity: string;
  row_key: string;
  operation: string;
  version_before: number | null;
  version_after: number | null;
  payload: string;
  attempts: number;
  last_error: string | null;
}

function send(
  app: FastifyInstance,
  method: string,
  url: string,
  payload?: unknown,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: method as 'POST',
    url,
    ...(payload === undefined
      ? {}
      : {
          payload: JSON.stringify(payload),
          headers: { 'content-type': 'application/json', ...headers },
        }),
  });
}

export function outboxSuite(engine: EngineUnderTest): void {
  describe(`AutoCrud outbox on ${engine.name}`, () => {
    let app: FastifyInstance | undefined;
    const records = async (where = '1 = 1', table = 'kit_outbox'): Promise<RecordRow[]> =>
      (await engine.sql(`select * from ${table} where ${where} order by seq`)).map((r) => ({
        ...(r as unknown as RecordRow),
        seq: Number(r.seq),
        attempts: Number(r.attempts),
      }));
    const dead = (): Promise<RecordRow[]> => records('1 = 1', 'kit_outbox_dead');
    const waiting = async (): Promise<number> => (await records()).length;

    async function start(
      outbox: OutboxOptions | true,
      subscribe?: (crud: KitAutoCrud) => void,
    ): Promise<{ app: FastifyInstance; crud: KitAutoCrud }> {
      const made = Fastify();
      addKit(made, [ItemsEndpoint, MemosEndpoint, PatientsEndpoint], (opt) => {
        opt.healthCheckDetailLevel = 'Full';
      });
      const crud = addKitAutoCrud(made, engine.connection, { createTables: true, outbox });
      subscribe?.(crud);
      await useKit(made);
      await made.ready();
      app = made;
      return { app: made, crud };
    }

    beforeEach(async () => {
      for (const table of [
        'outbox_items',
        'outbox_memos',
        'outbox_patients',
        'kit_changes',
        'kit_outbox',
        'kit_outbox_dead',
        'kit_outbox_lease',
      ])
        await engine.sql(`drop table if exists ${table}`);
    });
    afterEach(async () => {
      await app?.close();
      app = undefined;
    });

    it('each committed write through the routes is one record with the change, written in its transaction', async () => {
      const { app } = await start({ ...FAST, dispatch: false });
      const created = await send(app, 'POST', '/api/items', { name: 'kettle', price: 40 });
      assert.equal(created.statusCode, 201, created.body);
      const id = created.json<{ id: number }>().id;
      assert.equal(
        (
          await send(
            app,
            'PATCH',
            `/api/items/${id}`,
            { price: 35 },
            { 'content-type': 'application/merge-patch+json' },
          )
        ).statusCode,
        200,
      );
      assert.equal(
        (await send(app, 'PUT', `/api/items/${id}`, { name: 'kettle 2', price: 35 })).statusCode,
        200,
      );
      assert.equal((await send(app, 'DELETE', `/api/items/${id}`)).statusCode, 204);
      const bulk = await send(app, 'POST', '/api/items', [
        { name: 'pot', price: 12 },
        { name: 'pan', price: 20 },
      ]);
      assert.equal(bulk.statusCode, 201, bulk.body);
      const rows = await records();
      assert.deepEqual(
        rows.map((r) => [
          r.entity,
          r.operation,
          r.version_before === null ? null : Number(r.version_before),
          r.version_after === null ? null : Number(r.version_after),
          r.attempts,
        ]),
        [
          ['OutboxItem', 'create', null, 1, 0],
          ['OutboxItem', 'patch', 1, 2, 0],
          ['OutboxItem', 'update', 2, 3, 0],
          ['OutboxItem', 'softDelete', 3, 4, 0],
          ['OutboxItem', 'create', null, 1, 0],
          ['OutboxItem', 'create', null, 1, 0],
        ],
      );
      assert.deepEqual(JSON.parse(rows[0]?.row_key ?? ''), id);
      assert.deepEqual(JSON.parse(rows[0]?.payload ?? ''), {
        after: { id, name: 'kettle', price: 40, version: 1, isDeleted: false },
      });
      assert.deepEqual(JSON.parse(rows[1]?.payload ?? ''), {
        changed: ['price', 'version'],
        before: { price: 40, version: 1 },
        after: { price: 35, version: 2 },
      });
      assert.deepEqual(JSON.parse(rows[3]?.payload ?? '').changed, ['version', 'isDeleted']);
      assert.equal(
        new Set(rows.map((r) => r.id)).size,
        rows.length,
        'one idempotency id per record',
      );
    });

    it("with the history on too: the record follows the history row in the same transaction, carries the request's correlation id, and a redacted field only by name", async () => {
      const seen: ChangeMessage[] = [];
      const { app } = await start(FAST, (crud) =>
        crud.onChange(Patient, (message) => void seen.push(message)),
      );
      const created = await app.inject({
        method: 'POST',
        url: '/api/patients',
        payload: { name: 'Ada', ssn: '123-45-6789' },
      });
      assert.equal(created.statusCode, 201, created.body);
      const id = created.json<{ id: number }>().id;
      const patched = await app.inject({
        method: 'PATCH',
        url: `/api/patients/${id}`,
        payload: { ssn: '999-99-9999' },
        headers: { 'content-type': 'application/merge-patch+json' },
      });
      assert.equal(patched.statusCode, 200, patched.body);
      await until('both delivered', () => seen.length === 2, 20_000);
      assert.deepEqual(
        seen.map((m) => m.operation),
        ['create', 'patch'],
      );
      const rows = seen.map((m) => ({ payload: JSON.stringify(m) }));
      const history = await engine.sql(
        `select correlation_id from kit_changes where entity = 'OutboxPatient' order by id`,
      );
      const correlations = history.map((h) => h.correlation_id);
      assert.equal(correlations.length, 2, 'the history recorded the same writes');
      assert.ok(
        correlations.every((c) => typeof c === 'string' && c !== '') &&
          correlations[0] !== correlations[1],
        JSON.stringify(correlations),
      );
      assert.deepEqual(
        seen.map((m) => m.correlationId),
        correlations,
        "each record carries its request's correlation id, as its history row does",
      );
      for (const text of [...rows.map((r) => r.payload), JSON.stringify(seen)])
        assert.doesNotMatch(text, /123-45-6789|999-99-9999/, 'no value of a redacted field');
      assert.deepEqual(seen[0]?.redacted, ['ssn']);
      assert.equal(seen[0]?.after?.name, 'Ada');
      assert.deepEqual(seen[1]?.redacted, ['ssn']);
      assert.ok(seen[1]?.changed?.includes('ssn'), 'recorded as changed');
    });

    it('a write that fails writes no record, and a record that cannot be written fails its write', async () => {
      const { app } = await start({ ...FAST, dispatch: false });
      assert.equal(
        (await send(app, 'POST', '/api/items', { name: 'taken', price: 1 })).statusCode,
        201,
      );
      const before = (await records()).length;
      assert.equal(
        (await send(app, 'POST', '/api/items', { name: 'taken', price: 2 })).statusCode,
        409,
      );
      assert.equal(
        (
          await send(app, 'POST', '/api/items', [
            { name: 'fresh', price: 1 },
            { name: 'taken', price: 2 },
          ])
        ).statusCode,
        409,
      );
      assert.equal(
        (await send(app, 'PUT', '/api/items/1', { name: 'x', price: 1 }, { 'if-match': '"7"' }))
          .statusCode,
        412,
      );
      assert.equal((await records()).length, before, 'no record for a write that failed');
      // The outbox table gone: the write cannot add its record, so it does not happen at all.
      await engine.sql('alter table kit_outbox rename to kit_outbox_away');
      try {
        const refused = await send(app, 'POST', '/api/items', { name: 'orphan', price: 3 });
        assert.ok(refused.statusCode >= 500, refused.body);
        assert.doesNotMatch(refused.body, /kit_outbox/, 'no SQL in the answer');
      } finally {
        await engine.sql('alter table kit_outbox_away rename to kit_outbox');
      }
      assert.equal(
        (await engine.sql(`select count(*) as n from outbox_items where name = 'orphan'`)).map(
          (r) => Number(r.n),
        )[0],
        0,
        'the write rolled back with its record',
      );
    });

    it('a subscriber gets every record once, in commit order per row, with a stable id', async () => {
      const seen: ChangeMessage[] = [];
      const { app, crud } = await start(FAST, (crud) =>
        crud.onChange(Item, (message) => void seen.push(message)),
      );
      const rows = 6;
      const patches = 8;
      await Promise.all(
        Array.from({ length: rows }, async (_, r) => {
          const res = await send(app, 'POST', '/api/items', { name: `row-${r}`, price: 0 });
          assert.equal(res.statusCode, 201, res.body);
          const id = res.json<{ id: number }>().id;
          for (let p = 1; p <= patches; p++) {
            const patched = await send(
              app,
              'PATCH',
              `/api/items/${id}`,
              { price: p },
              { 'content-type': 'application/merge-patch+json' },
            );
            assert.equal(patched.statusCode, 200, patched.body);
          }
        }),
      );
      const total = rows * (patches + 1);
      await until(`${total} deliveries`, () => seen.length >= total, 20_000);
      await sleep(200);
      assert.equal(seen.length, total, 'each record delivered once');
      assert.equal(new Set(seen.map((m) => m.id)).size, total);
      const byRow = new Map<string, ChangeMessage[]>();
      for (const m of seen)
        byRow.set(JSON.stringify(m.key), [...(byRow.get(JSON.stringify(m.key)) ?? []), m]);
      assert.equal(byRow.size, rows);
      for (const messages of byRow.values()) {
        assert.deepEqual(
          messages.map((m) => m.versionAfter),
          Array.from({ length: patches + 1 }, (_, i) => i + 1),
          'per row in commit order',
        );
        assert.deepEqual(
          messages.map((m) => m.after?.price),
          [0, ...Array.from({ length: patches }, (_, i) => i + 1)],
        );
      }
      await until('the delivered records deleted', async () => (await waiting()) === 0, 20_000);
      assert.equal((await dead()).length, 0);
      const stats = crud.outboxStats();
      assert.equal(stats?.leader, true);
      assert.equal(stats?.delivered, total);
      assert.equal(stats?.retries, 0);
    });

    it('a subscriber failing 3 times then succeeding gets the record once, after 3 counted retries; the row waits meanwhile', async () => {
      const calls: ChangeMessage[] = [];
      let failures = 0;
      const { app, crud } = await start(FAST, (crud) =>
        crud.onChange(Memo, (message) => {
          calls.push(message);
          if (message.operation === 'create' && failures < 3) {
            failures += 1;
            throw new Error(`search index down (${failures})`);
          }
        }),
      );
      const created = await send(app, 'POST', '/api/memos', { text: 'a' });
      const id = created.json<{ id: number }>().id;
      assert.equal(
        (
          await send(
            app,
            'PATCH',
            `/api/memos/${id}`,
            { text: 'b' },
            { 'content-type': 'application/merge-patch+json' },
          )
        ).statusCode,
        200,
      );
      await until('the patch delivered', () => calls.some((m) => m.operation === 'patch'), 20_000);
      await sleep(200);
      assert.deepEqual(
        calls.map((m) => [m.operation, m.attempt]),
        [
          ['create', 1],
          ['create', 2],
          ['create', 3],
          ['create', 4],
          ['patch', 1],
        ],
        'the patch never overtook the create',
      );
      assert.equal(
        new Set(calls.filter((m) => m.operation === 'create').map((m) => m.id)).size,
        1,
        'every attempt carries the same id',
      );
      assert.equal(crud.outboxStats()?.retries, 3);
      assert.equal(crud.outboxStats()?.deadLettered, 0);
      await until('both deleted once delivered', async () => (await waiting()) === 0, 20_000);
      assert.equal((await dead()).length, 0);
    });

    it("a record is dead after maxAttempts: moved to kit_outbox_dead with its last error and attempts, counted by the backlog and the outbox check, and its row's later records, held until then, go on in order", async () => {
      const events: string[] = [];
      const { app, crud } = await start({ ...FAST, maxAttempts: 3 }, (crud) =>
        crud.onChange(Memo, (message) => {
          events.push(
            `${message.operation}#${message.operation === 'create' ? message.attempt : String(message.versionAfter ?? (message.after as { text: string }).text)}`,
          );
          if (
            message.operation === 'create' &&
            (message.after as { text: string }).text === 'doomed'
          )
            throw new Error('refused for good');
        }),
      );
      const id = (await send(app, 'POST', '/api/memos', { text: 'doomed' })).json<{ id: number }>()
        .id;
      for (const text of ['after 1', 'after 2'])
        assert.equal(
          (
            await send(
              app,
              'PATCH',
              `/api/memos/${id}`,
              { text },
              { 'content-type': 'application/merge-patch+json' },
            )
          ).statusCode,
          200,
        );
      await until('the patches delivered after the dead create', () => events.length === 5, 20_000);
      assert.deepEqual(
        events,
        ['create#1', 'create#2', 'create#3', 'patch#after 1', 'patch#after 2'],
        'the patches waited for the create until it was dead, then went in order',
      );
      const stats = crud.outboxStats();
      assert.equal(stats?.deadLettered, 1);
      assert.equal(stats?.retries, 2);
      assert.match(stats?.lastError ?? '', /refused for good/);
      await until('the delivered patches deleted', async () => (await waiting()) === 0, 20_000);
      const [moved, ...more] = await dead();
      assert.equal(more.length, 0);
      assert.equal(moved?.operation, 'create');
      assert.equal(moved?.attempts, 3);
      assert.match(moved?.last_error ?? '', /refused for good/);
      assert.equal(JSON.parse(moved?.row_key ?? ''), id);
      assert.deepEqual(JSON.parse(moved?.payload ?? ''), { after: { id, text: 'doomed' } });
      const [deadAt] = await engine.sql('select dead_at, created_at from kit_outbox_dead');
      assert.ok(
        Number(deadAt?.dead_at) >= Number(deadAt?.created_at) &&
          Number(deadAt?.dead_at) > Date.now() - 60_000,
        JSON.stringify(deadAt),
      );
      await sleep(1100); // the check reads the backlog at most once a second
      const health = await app.inject('/healthz');
      const check = health.json<{
        checks: Record<
          string,
          { status: string; description?: string; data?: Record<string, unknown> }
        >;
      }>().checks.outbox;
      assert.equal(check?.status, 'degraded', health.body);
      assert.match(check?.description ?? '', /1 dead outbox record\(s\): see kit_outbox_dead/);
      assert.equal(check?.data?.dead, 1);
      assert.equal(check?.data?.pending, 0);
      assert.equal(check?.data?.deadLettered, 1);
      assert.deepEqual(
        [crud.outboxStats()?.pending, crud.outboxStats()?.dead],
        [0, 1],
        'the backlog as the check last read it',
      );
    });

    it('a dead record re-queued as docs/autocrud.md says is delivered again, with its id, and the check is healthy again', async () => {
      let refusing = true;
      const seen: ChangeMessage[] = [];
      const { app } = await start({ ...FAST, maxAttempts: 2 }, (crud) =>
        crud.onChange(Memo, (message) => {
          if (refusing) throw new Error('down');
          seen.push(message);
        }),
      );
      assert.equal((await send(app, 'POST', '/api/memos', { text: 'again' })).statusCode, 201);
      await until('the record dead', async () => (await dead()).length === 1, 20_000);
      const [moved] = await dead();
      refusing = false;
      const columns =
        'seq, id, entity, row_key, operation, version_before, version_after, payload, correlation_id, subject, trace_id, created_at, done';
      await engine.sql(
        `insert into kit_outbox (${columns}) select ${columns} from kit_outbox_dead where seq = ${moved?.seq}`,
      );
      await engine.sql(`delete from kit_outbox_dead where seq = ${moved?.seq}`);
      await until('the re-queued record delivered', () => seen.length === 1, 20_000);
      assert.equal(seen[0]?.id, moved?.id, 'the same idempotency id');
      assert.equal(seen[0]?.attempt, 1, 'its attempts start again');
      await until('deleted once delivered', async () => (await waiting()) === 0, 20_000);
      await sleep(1100);
      const health = await app.inject('/healthz');
      assert.equal(
        health.json<{ checks: Record<string, { status: string }> }>().checks.outbox?.status,
        'healthy',
        health.body,
      );
      // A new record after the re-queued one: the identity goes on past it.
      assert.equal((await send(app, 'POST', '/api/memos', { text: 'next' })).statusCode, 201);
      await until('the next one delivered', () => seen.length === 2, 20_000);
      assert.ok(Number(seen[1]?.seq) > Number(moved?.seq));
    });

    it('a graceful shutdown lets the batch in flight finish, gives the lease up, and the next instance delivers the rest', async () => {
      const first: ChangeMessage[] = [];
      const { app: one } = await start({ ...FAST, batchSize: 10 }, (crud) =>
        crud.onChange(Memo, async (message) => {
          await sleep(60);
          first.push(message);
        }),
      );
      for (let i = 0; i < 40; i++)
        assert.equal((await send(one, 'POST', '/api/memos', { text: `m-${i}` })).statusCode, 201);
      await until('deliveries under way', () => first.length > 0, 20_000);
      await one.close();
      app = undefined;
      const [lease] = await engine.sql('select expires_at from kit_outbox_lease');
      assert.equal(Number(lease?.expires_at), 0, 'the lease is given up, not left to lapse');
      const left = await waiting();
      assert.ok(left > 0, 'records are left for the next instance');
      assert.equal(
        40 - left,
        first.length,
        'what the first instance delivered is deleted: its batch finished before it stopped',
      );
      const second: ChangeMessage[] = [];
      await start(FAST, (crud) => crud.onChange(Memo, (message) => void second.push(message)));
      await until('the rest delivered by the next instance', () => second.length === left, 20_000);
      const ids = [...first, ...second].map((m) => m.id);
      assert.equal(ids.length, 40);
      assert.equal(new Set(ids).size, 40, 'nothing delivered twice');
    });

    it("in one batch, one row's record failing while the others succeed: the others are deleted together, only the failed one is retried, and its row's next record waits", async () => {
      const calls: ChangeMessage[] = [];
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let refusals = 0;
      const { app, crud } = await start(FAST, (crud) =>
        crud.onChange(Memo, async (message) => {
          calls.push(message);
          const text = (message.after as { text?: string } | undefined)?.text;
          if (text === 'gate') await gate;
          if (text === 'bad' && message.operation === 'create' && refusals < 2) {
            refusals += 1;
            throw new Error(`refused (${refusals})`);
          }
        }),
      );
      // The gate's delivery holds its batch open: the next ten records are written meanwhile, so the next batch reads them all at once.
      assert.equal((await send(app, 'POST', '/api/memos', { text: 'gate' })).statusCode, 201);
      await until('the gate delivered', () => calls.length === 1, 20_000);
      const ids: number[] = [];
      for (const text of ['g1', 'g2', 'bad', 'g3', 'g4', 'g5', 'g6', 'g7', 'g8'])
        ids.push((await send(app, 'POST', '/api/memos', { text })).json<{ id: number }>().id);
      const bad = ids[2] as number;
      assert.equal(
        (
          await send(
            app,
            'PATCH',
            `/api/memos/${bad}`,
            { text: 'bad, patched' },
            { 'content-type': 'application/merge-patch+json' },
          )
        ).statusCode,
        200,
      );
      release();
      await until(
        'every record delivered',
        async () => calls.length >= 13 && (await waiting()) === 0,
        20_000,
      );
      const next = calls.slice(1);
      // The batch after the gate: the nine creates once each, the bad one's patch held behind its create.
      const byText = (text: string) =>
        next.filter((m) => (m.after as { text?: string } | undefined)?.text === text);
      for (const text of ['g1', 'g2', 'g3', 'g4', 'g5', 'g6', 'g7', 'g8'])
        assert.equal(byText(text).length, 1, `${text} delivered once`);
      assert.deepEqual(
        byText('bad').map((m) => m.attempt),
        [1, 2, 3],
        'the failed record retried until it went through',
      );
      const badRow = next.filter((m) => JSON.stringify(m.key) === JSON.stringify(bad));
      assert.deepEqual(
        badRow.map((m) => `${m.operation}#${m.attempt}`),
        ['create#1', 'create#2', 'create#3', 'patch#1'],
        'the patch waited behind its create',
      );
      const stats = crud.outboxStats();
      assert.equal(stats?.delivered, 11);
      assert.equal(stats?.retries, 2);
      assert.equal(stats?.deadLettered, 0);
    });

    it('a batch whose lease is lost mid-delivery: what it delivered is deleted (not sent again), then the instance stops dispatching until it leads again', async () => {
      const calls: ChangeMessage[] = [];
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const { app, crud } = await start({ ...FAST, leaseMs: 900 }, (crud) =>
        crud.onChange(Memo, async (message) => {
          calls.push(message);
          await gate;
        }),
      );
      await until('this instance leading', () => crud.outboxStats()?.leader === true, 20_000);
      assert.equal((await send(app, 'POST', '/api/memos', { text: 'in flight' })).statusCode, 201);
      await until('the delivery under way', () => calls.length === 1, 20_000);
      // Another instance takes the lease (a new term) while the batch waits on its subscriber.
      await engine.sql(
        `update kit_outbox_lease set owner = 'another instance', term = term + 1, expires_at = expires_at + 600000`,
      );
      await until('the lease seen lost', () => crud.outboxStats()?.leader === false, 10_000);
      release();
      await until('the batch deleted', async () => (await waiting()) === 0, 10_000);
      assert.equal(crud.outboxStats()?.delivered, 1);
      // Not the leader: a new record waits, undelivered, while the other instance holds the lease.
      assert.equal((await send(app, 'POST', '/api/memos', { text: 'later' })).statusCode, 201);
      await sleep(500);
      assert.equal(calls.length, 1, 'no delivery without the lease');
      assert.equal(await waiting(), 1);
      // The other instance's lease lapses: this one leads again and delivers the rest, nothing twice.
      await engine.sql('update kit_outbox_lease set expires_at = 0');
      await until('the rest delivered', async () => (await waiting()) === 0, 10_000);
      assert.deepEqual(
        calls.map((m) => (m.after as { text: string }).text),
        ['in flight', 'later'],
      );
      assert.equal(crud.outboxStats()?.leader, true);
    });

    it('a delivery that outlives deliveryTimeoutMs fails (its signal aborted) and is retried; deliveries beside it are not disturbed', async () => {
      const aborted: string[] = [];
      const calls: ChangeMessage[] = [];
      const { app, crud } = await start({ ...FAST, deliveryTimeoutMs: 300 }, (crud) =>
        crud.onChange(Memo, (message, signal) => {
          calls.push(message);
          const text = (message.after as { text: string }).text;
          if (text !== 'hang' || message.attempt > 1) return;
          // Never settles by itself: only the deadline ends it.
          return new Promise<void>(() =>
            signal.addEventListener(
              'abort',
              () => aborted.push(String((signal.reason as Error).message)),
              { once: true },
            ),
          );
        }),
      );
      for (const text of ['a', 'hang', 'b', 'c'])
        assert.equal((await send(app, 'POST', '/api/memos', { text })).statusCode, 201);
      await until(
        'every record delivered',
        async () => calls.length >= 5 && (await waiting()) === 0,
        10_000,
      );
      assert.equal(aborted.length, 1, 'the hanging delivery saw its signal abort');
      assert.match(aborted[0] as string, /deliveryTimeoutMs \(300 ms\)/);
      const hang = calls.filter((m) => (m.after as { text: string }).text === 'hang');
      assert.deepEqual(
        hang.map((m) => m.attempt),
        [1, 2],
      );
      for (const text of ['a', 'b', 'c'])
        assert.equal(
          calls.filter((m) => (m.after as { text: string }).text === text).length,
          1,
          `${text} delivered once`,
        );
      const stats = crud.outboxStats();
      assert.equal(stats?.retries, 1);
      assert.equal(stats?.delivered, 4);
      assert.match(stats?.lastError ?? '', /deliveryTimeoutMs/);
    });

    it('onChange without the outbox, and bad outbox options, fail with their codes', async () => {
      const made = Fastify();
      addKit(made, [ItemsEndpoint]);
      const crud = addKitAutoCrud(made, engine.connection, { createTables: true });
      assert.throws(() => crud.onChange(Item, () => undefined), {
        code: 'KIT_ERR_AUTOCRUD_OUTBOX_OFF',
      });
      await made.close();
      const bad = Fastify();
      addKit(bad, []);
      assert.throws(
        () => addKitAutoCrud(bad, engine.connection, { outbox: { maxAttempts: 0 } }),
        (err: Error & { code?: string }) =>
          err.code === 'KIT_ERR_INVALID_OPTION' && /outbox\.maxAttempts = 0/.test(err.message),
      );
      assert.throws(
        () =>
          addKitAutoCrud(bad, engine.connection, { outbox: { targets: [{ name: 'x' } as never] } }),
        (err: Error & { code?: string }) =>
          err.code === 'KIT_ERR_INVALID_OPTION' && /outbox\.targets\[0\]/.test(err.message),
      );
      await bad.close();
    });
  });
}
