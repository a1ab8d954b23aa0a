// @test-lines: once - correlation ids of stored changes over inject, on PGlite and node:sqlite
// With the audit trail off (its default), the correlation id AutoCrud stores with a change (in
// kit_changes and kit_outbox) is unique across Kit apps and restarts on one database: never
// Fastify's per-process request counter (`req-1`, which every instance and every restart repeats),
// and always the id the answer carries in its X-Correlation-Id header (or its problem body).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify';
import { addKit, useKit } from '@kit/core';
import { addKitAutoCrud, AutoCrud, CrudOperations, defineEntity } from '@kit/autocrud';
import { sqliteAvailable } from '../src/mapper/engines/sqlite/engine.ts';
import { pgliteEngine, sqliteEngine } from './suite/engines.ts';
import type { EngineUnderTest } from './suite/fixtures.ts';

const Parcel = defineEntity({
  name: 'CorrParcel',
  table: 'corr_parcels',
  schema: Type.Object({
    id: Type.Integer(),
    label: Type.String({ minLength: 1, maxLength: 40 }),
    version: Type.Integer(),
  }),
  writable: ['label'],
  unique: [['label']],
  version: 'version',
  history: true,
});

@AutoCrud(Parcel, { operations: CrudOperations.All | CrudOperations.Patch })
class ParcelsEndpoint {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A Kit app without the audit trail, recording history and the outbox (not dispatched). */
async function start(engine: EngineUnderTest): Promise<FastifyInstance> {
  const app = Fastify();
  addKit(app, [ParcelsEndpoint], (opt) => {
    opt.docsPath = false;
  });
  addKitAutoCrud(app, engine.connection, { createTables: true, outbox: { dispatch: false } });
  await useKit(app);
  await app.ready();
  return app;
}

const send = (
  app: FastifyInstance,
  method: 'POST' | 'PATCH',
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> =>
  app.inject({
    method,
    url,
    payload: JSON.stringify(body),
    headers: {
      'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
      ...headers,
    },
  });

/** A create and a patch of it; the correlation header of each answer. */
async function writes(app: FastifyInstance, label: string): Promise<string[]> {
  const created = await send(app, 'POST', '/api/parcels', { label });
  assert.equal(created.statusCode, 201, created.body);
  const id = created.json<{ id: number }>().id;
  const patched = await send(app, 'PATCH', `/api/parcels/${id}`, { label: `${label}-2` });
  assert.equal(patched.statusCode, 200, patched.body);
  return [created, patched].map((res) => {
    const header = res.headers['x-correlation-id'];
    assert.equal(typeof header, 'string', `the answer carries its correlation id: ${res.body}`);
    return String(header);
  });
}

function correlationSuite(engine: EngineUnderTest, together: boolean): void {
  it('two instances and a restart with the audit trail off store ids that never collide, each the one its answer carried', async () => {
    for (const table of [
      'corr_parcels',
      'kit_changes',
      'kit_outbox',
      'kit_outbox_dead',
      'kit_outbox_lease',
    ])
      await engine.sql(`drop table if exists ${table}`);
    const answered: string[] = [];
    const first = await start(engine);
    let second: FastifyInstance | undefined;
    try {
      answered.push(...(await writes(first, 'a1')), ...(await writes(first, 'a2')));
      if (together) {
        // A second instance on the same database at the same time: its own requests 1, 2, 3, 4.
        second = await start(engine);
        answered.push(...(await writes(second, 'b1')), ...(await writes(second, 'b2')));
      }
    } finally {
      await second?.close();
      await first.close();
    }
    // The restart: a new app on the same database counts its requests from 1 again.
    const restarted = await start(engine);
    try {
      answered.push(...(await writes(restarted, 'c1')), ...(await writes(restarted, 'c2')));
      // A read stores nothing and pays for no id: no header.
      const read = await restarted.inject('/api/parcels?pageSize=1');
      assert.equal(read.statusCode, 200, read.body);
      assert.equal(read.headers['x-correlation-id'], undefined);
      // A refused write stores nothing; its problem answer carries an id of its own all the same.
      const refused = await send(restarted, 'POST', '/api/parcels', { label: 'c2-2' });
      assert.equal(refused.statusCode, 409, refused.body);
      const problem = refused.json<{ correlationId?: string }>();
      assert.match(String(problem.correlationId), UUID);
      assert.equal(problem.correlationId, refused.headers['x-correlation-id']);
      assert.ok(!answered.includes(String(problem.correlationId)));
      // A valid incoming id is the caller's and is kept as sent, as the audit trail keeps it.
      const forwarded = await send(
        restarted,
        'POST',
        '/api/parcels',
        { label: 'd1' },
        { 'x-correlation-id': 'checkout-7f3c.1' },
      );
      assert.equal(forwarded.statusCode, 201, forwarded.body);
      assert.equal(forwarded.headers['x-correlation-id'], 'checkout-7f3c.1');
    } finally {
      await restarted.close();
    }

    for (const id of answered) assert.match(id, UUID);
    assert.equal(
      new Set(answered).size,
      answered.length,
      `no two answers share an id: ${answered}`,
    );

    const stored = async (table: string): Promise<string[]> =>
      (await engine.sql(`select correlation_id from ${table}`))
        .map((r) => String(r.correlation_id))
        .sort();
    // One history row and one outbox record per write: each carries its own request's id.
    const expected = [...answered, 'checkout-7f3c.1'].sort();
    for (const table of ['kit_changes', 'kit_outbox'])
      assert.deepEqual(await stored(table), expected, table);
  });
}

describe('PGlite: a restart on one database', () => {
  correlationSuite(pgliteEngine(), false);
});

if (!sqliteAvailable()) {
  it('correlation ids on node:sqlite', (t) =>
    t.skip(`node:sqlite is not in Node ${process.version} (it is from 22.13 and 23.4)`));
} else {
  describe('node:sqlite: two instances at once and a restart on one file', () => {
    correlationSuite(sqliteEngine('kit-correlation-'), true);
  });
}
