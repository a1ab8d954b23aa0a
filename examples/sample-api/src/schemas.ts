// The sample's shared TypeBox schemas. Each carries an `$id`, so Kit documents it once as a named
// component schema (#/components/schemas/User, ...) however many routes use it, and the
// TypeBox type provider types request and reply from them.
import { Type } from '@fastify/type-provider-typebox';

export const User = Type.Object(
  { id: Type.String(), name: Type.String(), email: Type.String({ format: 'email' }) },
  { $id: 'User', description: 'A user of the shop.' },
);
export const NewUser = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    email: Type.String({ format: 'email', maxLength: 320 }),
  },
  { $id: 'NewUser', description: 'A user to create.' },
);
export const OrderItem = Type.Object(
  { sku: Type.String(), quantity: Type.Integer({ minimum: 1 }) },
  { $id: 'OrderItem' },
);
export const Order = Type.Object(
  {
    id: Type.String(),
    userId: Type.String(),
    items: Type.Array(OrderItem),
    totalCents: Type.Integer(),
    status: Type.Union([Type.Literal('open'), Type.Literal('paid'), Type.Literal('shipped')]),
  },
  { $id: 'Order', description: 'An order, as version 2 of the API shows it.' },
);

/** `{id}` path parameters. */
export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });
