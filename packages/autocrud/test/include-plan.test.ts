// @test-lines: once - include plans made through Kit's API on PGlite
// A hand-written read's includes: the runtime plans them from the paths `include=` names
// (crud.includePlan), and a repository read given the plan answers the related rows as the
// generated read by key does; a path that is not a relation is refused, naming those accepted.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { PGlite } from '@electric-sql/pglite';
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, useKit, type KitError } from '@kit/core';
import { addKitAutoCrud, type KitAutoCrud } from '@kit/autocrud';
import { freshPGlite } from './suite/engines.ts';
import { Customer, Item, Line, Order, RELATION_ENDPOINTS } from './suite/relations.ts';

describe('crud.includePlan: includes for a repository read', () => {
  let pglite: PGlite | undefined;
  let app: FastifyInstance;
  let crud: KitAutoCrud;
  before(async () => {
    app = Fastify();
    addKit(app, RELATION_ENDPOINTS);
    pglite = await freshPGlite();
    crud = addKitAutoCrud(app, pglite, { createTables: true });
    await useKit(app);
  });
  after(async () => {
    await app.close();
    await pglite?.close();
  });

  it('a read given the plan answers what include= answers', async () => {
    const customer = await crud.repository(Customer).create({ name: 'Ada' });
    const item = await crud.repository(Item).create({ name: 'Kettle' });
    const order = await crud.repository(Order).create({ customerId: customer.id });
    for (const quantity of [1, 2])
      await crud.repository(Line).create({ orderId: order.id, quantity, productId: item.id });
    const read = (await crud
      .repository(Order)
      .get(order.id, { include: crud.includePlan(Order, ['customer', 'lines.product']) })) as
      Record<string, unknown> | undefined;
    const http = await app.inject({
      method: 'GET',
      url: `/api/order/${order.id}?include=customer,lines.product`,
    });
    assert.equal(http.statusCode, 200, http.body);
    assert.deepEqual((read?.customer as { name?: string } | undefined)?.name, 'Ada');
    assert.deepEqual(
      (read?.lines as Array<{ quantity: number; product: { name: string } }>).map((l) => [
        l.quantity,
        l.product.name,
      ]),
      [
        [1, 'Kettle'],
        [2, 'Kettle'],
      ],
    );
    assert.deepEqual(JSON.parse(JSON.stringify(read)), http.json());
    assert.deepEqual(crud.includePlan(Order, []), []);
  });

  it('a path that is not a relation is refused, naming those accepted', () => {
    assert.throws(
      () => crud.includePlan(Order, ['nope']),
      (e: KitError) =>
        e.code === 'KIT_ERR_INVALID_ARGUMENT' &&
        /"nope" is not a relation path of RelOrder \(accepted: .*customer/.test(e.message),
    );
  });
});

/** Never called: `npm run typecheck` holds that a host's own object is not a plan, not even `{}`. */
function _hostObjectsAreNotPlans(crud: KitAutoCrud): void {
  const orders = crud.repository(Order);
  // @ts-expect-error an empty object is not an IncludePlan
  void orders.get(1, { include: [{}] });
  // @ts-expect-error nor is an object naming a relation
  void orders.get(1, { include: [{ name: 'customer', kind: 'one', field: 'customerId' }] });
}
void _hostObjectsAreNotPlans;
