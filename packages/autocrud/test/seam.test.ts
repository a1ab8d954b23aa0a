// @test-lines: every - async context: statements counted as spans of the tracing context
// The read/write seam costs an entity nothing when no layer is on it: a request on an entity
// without history, outbox or any hook enters none of the seam's code (its hook methods are
// counted) and runs the statements it ran before the seam (one per single read or write, no
// BEGIN or COMMIT: counted as OpenTelemetry CLIENT spans). Beside it, the four kinds of hook an
// entity with a layer gets, each seen doing its part: `before` inside the transaction ahead of the
// write's statements (its throw writes nothing), `write` inside the transaction after the rows,
// `committed` after it with the committed changes, and `read` choosing the runner the reads run on.
import './otel-sdk.ts';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { PGlite } from '@electric-sql/pglite';
import { Type } from '@sinclair/typebox';
import { sql } from 'kysely';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, useKit } from '@kit/core';
import {
  addKitAutoCrud,
  AutoCrud,
  CrudOperations,
  defineEntity,
  KIT_AUTOCRUD,
  type KitAutoCrud,
} from '@kit/autocrud';
import { ChangeHistory } from '../src/mapper/history/history.ts';
import { hooksOf } from '../src/mapper/repository.ts';
import { EntityHooks } from '../src/mapper/seam/hooks.ts';
import type { ChangeRecord } from '../src/mapper/seam/changes.ts';
import { exporter } from './otel-sdk.ts';
import { freshPGlite } from './suite/engines.ts';

const CLIENT = 2;

const Plain = defineEntity({
  name: 'SeamPlain',
  table: 'seam_plain',
  schema: Type.Object({
    id: Type.Integer(),
    name: Type.String({ maxLength: 40 }),
    version: Type.Integer(),
  }),
  writable: ['name'],
  version: 'version',
});

const Kept = defineEntity({
  name: 'SeamKept',
  table: 'seam_kept',
  schema: Type.Object({ id: Type.Integer(), name: Type.String({ maxLength: 40 }) }),
  writable: ['name'],
  history: true,
});

const OPS = CrudOperations.All | CrudOperations.Patch;
@AutoCrud(Plain, { operations: OPS })
class PlainEndpoint {}
@AutoCrud(Kept, { operations: OPS })
class KeptEndpoint {}

/** Counts every entry into the seam's per-request code, whichever entity it is for. */
function countSeamCalls(): { calls: () => number; restore: () => void } {
  const proto = EntityHooks.prototype;
  const { begin, record, commit } = proto;
  let n = 0;
  proto.begin = function (...args: Parameters<typeof begin>) {
    n++;
    return begin.apply(this, args);
  };
  proto.record = function (...args: Parameters<typeof record>) {
    n++;
    return record.apply(this, args);
  };
  proto.commit = function (...args: Parameters<typeof commit>) {
    n++;
    return commit.apply(this, args);
  };
  return {
    calls: () => n,
    restore: () => {
      proto.begin = begin;
      proto.record = record;
      proto.commit = commit;
    },
  };
}

describe('the read/write seam', () => {
  let app: FastifyInstance;
  let crud: KitAutoCrud;
  const committed: ChangeRecord[] = [];
  // Each hook's turn, in the order they ran: before, write, committed.
  const order: string[] = [];
  // The before hook refuses the next write while this is set.
  let refuseBefore = false;
  // A row the before hook writes on the write's transaction, by name: present only if it committed.
  let marker: string | undefined;
  let reads = 0;
  let pglite: PGlite | undefined;

  before(async () => {
    app = Fastify();
    addKit(app, [PlainEndpoint, KeptEndpoint]);
    pglite = await freshPGlite();
    addKitAutoCrud(app, pglite, { createTables: true });
    await useKit(app);
    crud = app.kit.services.resolve<KitAutoCrud>(KIT_AUTOCRUD);
    const hooks = hooksOf(crud.repository(Kept));
    hooks.add({
      committed: (changes) => {
        order.push('committed');
        committed.push(...changes);
      },
    });
    hooks.add({
      before: async (tx) => {
        order.push('before');
        if (refuseBefore) throw new Error('refused before the write');
        if (marker !== undefined)
          await tx.execute(
            sql`insert into seam_plain (name, version) values (${marker}, 1)`.compile(tx.db),
            '',
          );
      },
    });
    hooks.add({ read: (next) => (query, signal) => (reads++, next(query, signal)) });
    // A write hook that refuses one value: its throw rolls the write back.
    hooks.add({
      write: async (_tx, changes) => {
        order.push('write');
        if (changes.some((c) => c.after?.name === 'refused')) throw new Error('refused by a hook');
      },
    });
  });
  // The host's PGlite is the host's to close.
  after(async () => {
    await app?.close();
    await pglite?.close();
  });

  /** The statements one request ran (span names), and its status. */
  async function statementsOf(
    method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE',
    url: string,
    payload?: object,
  ): Promise<{ status: number; body: string; statements: string[] }> {
    exporter.reset();
    const res = await app.inject({ method, url, ...(payload ? { payload } : {}) });
    const statements = exporter
      .getFinishedSpans()
      .filter((span) => span.kind === CLIENT && span.attributes['db.system.name'] !== undefined)
      .map((span) => span.name);
    return { status: res.statusCode, body: res.body, statements };
  }

  it('an entity without hooks: chosen at start-up, no hook code per request, one statement per single read or write', async () => {
    const hooks = hooksOf(crud.repository(Plain));
    assert.equal(hooks.recording, false);
    assert.equal(hooks.inline, undefined);
    assert.equal(hooks.plainReads, true);
    const seam = countSeamCalls();
    try {
      const created = await statementsOf('POST', '/api/plain', { name: 'a' });
      assert.equal(created.status, 201, created.body);
      const id = (JSON.parse(created.body) as { id: number }).id;
      const steps = [
        created,
        await statementsOf('GET', `/api/plain/${id}`),
        await statementsOf('PATCH', `/api/plain/${id}`, { name: 'b' }),
        await statementsOf('PUT', `/api/plain/${id}`, { name: 'c' }),
        await statementsOf('DELETE', `/api/plain/${id}`),
      ];
      for (const step of steps) {
        assert.ok(step.status < 300, step.body);
        assert.equal(step.statements.length, 1, step.statements.join(', '));
        assert.ok(
          !step.statements.some((s) => /^(BEGIN|COMMIT)/i.test(s)),
          step.statements.join(', '),
        );
      }
      assert.equal(seam.calls(), 0, 'no seam code ran for the entity without hooks');
      // The same counter sees the entity with hooks: the count above is not blind.
      const kept = await statementsOf('POST', '/api/kept', { name: 'k' });
      assert.equal(kept.status, 201, kept.body);
      assert.ok(seam.calls() > 0);
    } finally {
      seam.restore();
    }
  });

  it('an entity with hooks: the write hook inside the transaction, the commit hook after it with the committed changes, the read hook choosing the runner', async () => {
    committed.length = 0;
    const created = await crud.repository(Kept).create({ name: 'x' });
    assert.deepEqual(
      committed.map((c) => [c.operation, c.key]),
      [['create', created.id]],
    );
    // The history's write hook recorded it on the same transaction.
    const history = await crud.repository(ChangeHistory).all();
    assert.ok(
      history.some(
        (h) =>
          h.entity === 'SeamKept' && h.rowKey === String(created.id) && h.operation === 'create',
      ),
    );
    const before = reads;
    await crud.repository(Kept).get(created.id);
    assert.equal(reads, before + 1, 'the read ran on the runner the read hook chose');
    // A failed write commits nothing: the commit hook is not told.
    committed.length = 0;
    await assert.rejects(
      crud.repository(Kept).update(created.id, { name: 'refused' }),
      /refused by a hook/,
    );
    assert.deepEqual(committed, []);
    assert.equal(((await crud.repository(Kept).get(created.id)) as { name: string }).name, 'x');
  });

  it("the before hook: inside the write's transaction, ahead of the write hook and the commit hook; its throw writes nothing", async () => {
    const hooks = hooksOf(crud.repository(Kept));
    assert.equal(hooks.guarded, true);
    assert.equal(hooks.transactional, true);
    assert.equal(hooks.inline, undefined, 'a guarded write keeps its transaction');
    const markers = async (name: string) =>
      (await crud.repository(Plain).all()).filter((r) => r.name === name).length;
    // A committed write: before, then the history's and the test's write hooks, then committed;
    // what the before hook wrote on the transaction committed with it.
    order.length = 0;
    committed.length = 0;
    marker = 'kept-before';
    const created = await crud.repository(Kept).create({ name: 'y' });
    assert.deepEqual(order, ['before', 'write', 'committed']);
    assert.equal(await markers('kept-before'), 1);
    // A write the write hook refuses: the before hook's row rolls back with it, so it ran inside
    // the same transaction.
    order.length = 0;
    marker = 'rolled-back';
    await assert.rejects(
      crud.repository(Kept).update(created.id, { name: 'refused' }),
      /refused by a hook/,
    );
    assert.deepEqual(order, ['before', 'write']);
    assert.equal(await markers('rolled-back'), 0, "the before hook ran on the write's transaction");
    // A before hook that throws: no row, no history, no commit hook, the write rejects with it.
    marker = undefined;
    order.length = 0;
    committed.length = 0;
    const rows = (await crud.repository(Kept).all()).length;
    const history = (await crud.repository(ChangeHistory).all()).length;
    refuseBefore = true;
    try {
      await assert.rejects(
        crud.repository(Kept).create({ name: 'never' }),
        /refused before the write/,
      );
      await assert.rejects(
        crud.repository(Kept).update(created.id, { name: 'never' }),
        /refused before the write/,
      );
    } finally {
      refuseBefore = false;
    }
    assert.deepEqual(order, ['before', 'before'], 'no write hook ran after the refusal');
    assert.deepEqual(committed, []);
    assert.equal((await crud.repository(Kept).all()).length, rows);
    assert.equal((await crud.repository(ChangeHistory).all()).length, history);
    assert.equal(((await crud.repository(Kept).get(created.id)) as { name: string }).name, 'y');
  });
});
