// Type-level test of the typed repository, checked by `npm run typecheck` (tsconfig.check.json):
// each `@ts-expect-error` line must fail to compile, or the directive itself is an error. Never
// run; the same misuse is refused at run time by test/suite/types.ts.
import { defineEntity, type EntityInput, type EntityRow, type KitAutoCrud } from '@kit/autocrud';

const Gadget = defineEntity({
  name: 'Gadget',
  table: 'gadgets',
  schema: {
    type: 'object',
    required: ['id', 'serial', 'status', 'createdAt'],
    properties: {
      id: { type: 'integer' },
      serial: { type: 'string', format: 'int64' },
      price: { type: 'string', format: 'decimal', 'x-precision': 12, 'x-scale': 2 },
      status: { type: 'string', enum: ['draft', 'live'], default: 'draft' },
      attrs: { type: ['object', 'null'] },
      tags: { type: 'array', items: { type: 'string' } },
      createdAt: { type: 'string', format: 'date-time' },
    },
  } as const,
  writable: ['serial', 'price', 'status', 'attrs', 'tags'],
  createdAt: 'createdAt',
});

declare const crud: KitAutoCrud;
const gadgets = crud.repository(Gadget);

// What is right compiles.
const input: EntityInput<typeof Gadget> = {
  serial: '9223372036854775807',
  status: 'live',
  attrs: { any: ['thing'] },
  tags: ['a'],
};
export const created: Promise<EntityRow<typeof Gadget>> = gadgets.create(input);
export const listed = gadgets.list({
  filters: [{ field: 'serial', op: 'gt', value: '0' }],
  sort: [{ field: 'createdAt', descending: true }],
  offset: 0,
  limit: 10,
});
export const updated = gadgets.update(1, { serial: '1' });
export const status: 'draft' | 'live' = (await created).status;
export const attrs: { [key: string]: unknown } | null = (await created).attrs;

// @ts-expect-error: serial is required (no default)
export const missing = gadgets.create({ status: 'live' });
// @ts-expect-error: an unknown field
export const unknown = gadgets.create({ serial: '1', colour: 'red' });
// @ts-expect-error: a read-only field (Kit's timestamp)
export const readOnly = gadgets.create({ serial: '1', createdAt: '2024-01-01T00:00:00Z' });
// @ts-expect-error: the primary key is not writable
export const key = gadgets.update(1, { serial: '1', id: 5 });
// @ts-expect-error: a 64-bit integer is a string, not a number
export const wrongType = gadgets.create({ serial: 5 });
// @ts-expect-error: not one of the enum's values
export const wrongEnum = gadgets.create({ serial: '1', status: 'gone' });
// @ts-expect-error: a JSON array field takes an array
export const wrongJson = gadgets.create({ serial: '1', tags: 'a' });
export const badSort = gadgets.list({
  filters: [],
  // @ts-expect-error: an unknown sort field
  sort: [{ field: 'weight', descending: false }],
  offset: 0,
  limit: 10,
});
export const badFilter = gadgets.list({
  // @ts-expect-error: an unknown filter field
  filters: [{ field: 'weight', op: 'eq', value: 1 }],
  sort: [],
  offset: 0,
  limit: 10,
});
