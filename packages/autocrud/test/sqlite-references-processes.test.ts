// @test-lines: every - node:sqlite: references checked across processes
// The soft delete of a parent and the writes naming it, from two real processes on one `sqlite:`
// file (test/fixtures/references-host.ts), round after round while both processes keep writing:
// the create's reference check and its insert are one BEGIN IMMEDIATE transaction, as is the soft
// delete's referrer check and its update, so the file's write lock puts one before the other
// across processes too (docs/decisions.md, "AutoCrud relations"). At the end no live order refers
// to a soft-deleted customer, and the file's integrity_check is ok.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startProcess, stopProcess, type ProcessHost } from '@kit/test-support/processes';
import { heavyOnSqlite, openIntact } from './suite/engines.ts';

const ROUNDS = 60;
const fixture = path.join(import.meta.dirname, 'fixtures', 'references-host.ts');

interface Answer {
  status: number;
  body: string;
}

async function send(
  host: ProcessHost,
  method: string,
  url: string,
  payload?: Record<string, unknown>,
): Promise<Answer> {
  const res = await fetch(`${host.base}${url}`, {
    method,
    ...(payload
      ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload) }
      : {}),
  });
  return { status: res.status, body: await res.text() };
}

async function created(
  host: ProcessHost,
  url: string,
  payload: Record<string, unknown>,
): Promise<number> {
  const res = await send(host, 'POST', url, payload);
  assert.equal(res.status, 201, res.body);
  return (JSON.parse(res.body) as { id: number }).id;
}

heavyOnSqlite('the reference race across processes on one sqlite: file', () => {
  describe('the reference race across processes on one sqlite: file', () => {
    let dir: string;
    const hosts: ProcessHost[] = [];
    before(() => {
      dir = mkdtempSync(path.join(tmpdir(), 'kit-sqlite-references-'));
    });
    after(async () => {
      for (const host of hosts) await stopProcess(host);
      rmSync(dir, { recursive: true, force: true });
    });

    it(`one process soft-deletes a customer while the other creates and moves orders naming it, ${ROUNDS} rounds under writes: never a live order of a soft-deleted customer`, async (t) => {
      const file = path.join(dir, 'shared.db');
      const a = await startProcess(fixture, { DATABASE_URL: `sqlite:${file}` });
      hosts.push(a);
      const b = await startProcess(fixture, { DATABASE_URL: `sqlite:${file}` });
      hosts.push(b);
      const home = await created(a, '/api/customers', { name: 'home' });
      // An order each process moves (PATCH) to the round's customer, racing like a create.
      const moved = new Map<ProcessHost, number>();
      for (const host of [a, b])
        moved.set(
          host,
          await created(host, '/api/orders', { customerId: home, note: `moved-${host.pid}` }),
        );
      // The load: both processes keep creating orders of a customer nobody deletes, two at a time each.
      let stop = false;
      const load = Promise.all(
        [a, b, a, b].map(async (host, loop) => {
          const statuses: number[] = [];
          for (let n = 0; !stop; n++)
            statuses.push(
              (
                await send(host, 'POST', '/api/orders', {
                  customerId: home,
                  note: `load-${loop}-${n}`,
                })
              ).status,
            );
          return statuses;
        }),
      );
      const outcomes = { deleted: 0, refused: 0, busy: 0 };
      const race = async (round: number) => {
        // Each process deletes in every other round; the other one writes.
        const [deleter, writer] = round % 2 === 0 ? [a, b] : [b, a];
        const customer = await created(deleter, '/api/customers', { name: `race-${round}` });
        const create = (n: number) => () =>
          send(writer, 'POST', '/api/orders', { customerId: customer, note: `race-${round}-${n}` });
        const move = () =>
          send(writer, 'PATCH', `/api/orders/${moved.get(writer)}`, { customerId: customer });
        const remove = () => send(deleter, 'DELETE', `/api/customers/${customer}`);
        // By round, the delete starts up to 3 ms before the writes, with them, or up to 3 ms after them.
        const lead = (round % 7) - 3;
        const later = <T>(ms: number, request: () => Promise<T>) =>
          ms > 0 ? sleep(ms).then(request) : request();
        const [deleted, ...writes] = await Promise.all([
          later(lead, remove),
          later(-lead, create(1)),
          later(-lead, move),
          later(-lead, create(2)),
        ]);
        // 503: the write lock was not had within acquireTimeoutMs (busy), nothing written.
        for (const w of writes)
          assert.ok(
            [200, 201, 422, 503].includes(w.status),
            `round ${round}: create or move: ${w.status} ${w.body}`,
          );
        const made = writes.filter((w) => w.status === 200 || w.status === 201).length;
        if (deleted.status === 204) {
          outcomes.deleted += 1;
          assert.equal(
            made,
            0,
            `round ${round}: the customer was soft-deleted and ${made} order(s) were written naming it`,
          );
        } else if (deleted.status === 409) {
          outcomes.refused += 1;
          assert.ok(
            made > 0,
            `round ${round}: the delete was refused for a referrer, and no order names the customer`,
          );
        } else {
          assert.equal(
            deleted.status,
            503,
            `round ${round}: delete: ${deleted.status} ${deleted.body}`,
          );
          outcomes.busy += 1;
        }
      };
      try {
        for (let round = 0; round < ROUNDS; round++) await race(round);
      } finally {
        // A failed round stops the load too, before the hosts go.
        stop = true;
        await load;
      }
      const loads = (await load).flat();
      assert.ok(
        loads.every((status) => status === 201 || status === 503),
        `load answers: ${[...new Set(loads)].join(',')}`,
      );
      assert.ok(
        loads.filter((status) => status === 201).length > ROUNDS,
        `${loads.length} load writes`,
      );
      await stopProcess(a, 'SIGTERM');
      await stopProcess(b, 'SIGTERM');
      const direct = openIntact(file);
      try {
        const [orphans] = direct
          .prepare(
            'select count(*) as n from x_orders o join x_customers c on c.id = o.customer_id where c.deleted = 1',
          )
          .all();
        assert.equal(Number(orphans?.n), 0, 'orders of a soft-deleted customer');
      } finally {
        direct.close();
      }
      t.diagnostic(`rounds: ${JSON.stringify(outcomes)}; load: ${loads.length} writes`);
      // Both outcomes must have happened, or the race was not run.
      assert.ok(outcomes.deleted > 0 && outcomes.refused > 0, JSON.stringify(outcomes));
    });
  });
});
