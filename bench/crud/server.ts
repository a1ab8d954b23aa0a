// One server of the AutoCrud benchmark, in its own process: `kit` (AutoCrud's generated routes),
// `platformatic` (@platformatic/sql-mapper + sql-openapi on a plain Fastify instance) or `floor`
// (hand-written Fastify routes on `pg`). All three serve the same `products` table with a pool of
// the same size, validate their input and serialize with a response schema.
// Usage: server.ts <kind> <postgres-url> <pool-size>; prints `READY <port>` once listening.
// Every server also answers GET /bench/stats with its process's CPU time, for CPU per request.
import Fastify, { type FastifyInstance } from 'fastify';
import { catalogEntity, ROUTES, type ServerKind } from './shape.js';
import { relationEntities } from './include.js';
import { SCOPED_ROLE } from './scoped.js';

/** The audience of the scoped scenario's tokens (the test authority's). */
const AUDIENCE = 'api://kit-tests';

// A 4th argument: the token authority of the scoped scenario (scoped.ts), for the Kit server.
const [kind, url, poolText, authority] = process.argv.slice(2) as [
  ServerKind,
  string,
  string,
  string | undefined,
];
const poolSize = Number(poolText);

async function kit(app: FastifyInstance): Promise<void> {
  const { addKit, useKit } = await import('@kit/core');
  const { addKitAutoCrud, AutoCrud, CrudOperations } = await import('@kit/autocrud');
  const Product = catalogEntity();
  @AutoCrud(Product, { operations: CrudOperations.All | CrudOperations.Patch })
  class ProductsEndpoint {}
  // The same table with the change history on (kit:history against kit:patch).
  @AutoCrud(catalogEntity(true), { operations: CrudOperations.Get | CrudOperations.Patch })
  class HistoryProductsEndpoint {}
  // The include scenario's customers, orders and lines (include.ts).
  const { Customer, Order, Line } = relationEntities();
  @AutoCrud(Customer)
  class CustomersEndpoint {}
  @AutoCrud(Order)
  class OrdersEndpoint {}
  @AutoCrud(Line)
  class LinesEndpoint {}
  // The scoped scenario (scoped.ts): the orders again under two rule sets that differ only in the row check.
  const reads = CrudOperations.List | CrudOperations.Get;
  @AutoCrud(Order, {
    operations: reads,
    authorization: { rules: [{ role: SCOPED_ROLE, allow: reads, checks: { customerId: 'sub' } }] },
  })
  class ScopedOrdersEndpoint {}
  @AutoCrud(Order, {
    operations: reads,
    authorization: { rules: [{ role: SCOPED_ROLE, allow: reads }] },
  })
  class PlainOrdersEndpoint {}
  // Kit's defaults: grouping, the OpenAPI document and /docs, health probes; no audit trail (its
  // cost is measured by `npm run bench`).
  addKit(
    app,
    [
      ProductsEndpoint,
      HistoryProductsEndpoint,
      CustomersEndpoint,
      OrdersEndpoint,
      LinesEndpoint,
      ...(authority ? [ScopedOrdersEndpoint, PlainOrdersEndpoint] : []),
    ],
    (opt) => {
      if (authority) opt.configureJwt(authority, [AUDIENCE]);
    },
  );
  // createTables: the bench makes its tables itself; this makes Kit's change history table only.
  addKitAutoCrud(app, url, {
    poolSize,
    cursorSecret: 'bench-cursor-secret-of-32-characters!',
    createTables: true,
  });
  await useKit(app);
}

async function platformatic(app: FastifyInstance): Promise<void> {
  const { default: sqlMapper } = await import('@platformatic/sql-mapper');
  const { default: sqlOpenApi } = await import('@platformatic/sql-openapi');
  await app.register(sqlMapper, { connectionString: url, poolSize });
  await app.register(sqlOpenApi, {});
}

async function floor(app: FastifyInstance): Promise<void> {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  app.addHook('onClose', () => pool.end());
  const columns = 'id, name, price, stock, category';
  const product = {
    type: 'object',
    required: ['id', 'name', 'price'],
    properties: {
      id: { type: 'integer' },
      name: { type: 'string' },
      price: { type: 'number' },
      stock: { type: ['integer', 'null'] },
      category: { type: ['string', 'null'] },
    },
  };
  const notFound = { type: 'about:blank', title: 'Not Found', status: 404 };

  app.get<{ Params: { id: number } }>(
    '/products/:id',
    {
      schema: {
        params: { type: 'object', required: ['id'], properties: { id: { type: 'integer' } } },
        response: { 200: product },
      },
    },
    async (request, reply) => {
      const { rows } = await pool.query(`select ${columns} from products where id = $1`, [
        request.params.id,
      ]);
      return rows[0] ?? reply.code(404).type('application/problem+json').send(notFound);
    },
  );

  app.get<{
    Querystring: {
      'filter[price][lt]'?: number;
      sort: string;
      page: number;
      pageSize: number;
      count: boolean;
    };
  }>(
    '/products',
    {
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            'filter[price][lt]': { type: 'number' },
            sort: { type: 'string', enum: ['-price'], default: '-price' },
            page: { type: 'integer', minimum: 1, maximum: 1_000_000, default: 1 },
            pageSize: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
            count: { type: 'boolean', default: true },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              items: { type: 'array', items: product },
              total: { type: 'integer' },
              page: { type: 'integer' },
              pageSize: { type: 'integer' },
              totalPages: { type: 'integer' },
            },
          },
        },
      },
    },
    async (request) => {
      const { page, pageSize, count } = request.query;
      const lt = request.query['filter[price][lt]'];
      const where = lt === undefined ? '' : 'where price < $1';
      const values = lt === undefined ? [] : [lt];
      const rows = pool.query(
        `select ${columns} from products ${where} order by price desc, id limit $${values.length + 1} offset $${values.length + 2}`,
        [...values, pageSize, (page - 1) * pageSize],
      );
      if (!count) return { items: (await rows).rows, page, pageSize };
      const [{ rows: items }, counted] = await Promise.all([
        rows,
        pool.query(`select count(*)::int as total from products ${where}`, values),
      ]);
      const total = counted.rows[0].total as number;
      return { items, total, page, pageSize, totalPages: Math.ceil(total / pageSize) };
    },
  );

  app.post<{
    Body: { name: string; price: number; stock?: number | null; category?: string | null };
  }>(
    '/products',
    {
      schema: {
        body: {
          type: 'object',
          required: ['name', 'price'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', maxLength: 200 },
            price: { type: 'number', minimum: 0 },
            stock: { type: ['integer', 'null'] },
            category: { type: ['string', 'null'], maxLength: 40 },
          },
        },
        response: { 201: product },
      },
    },
    async (request, reply) => {
      const { name, price, stock = null, category = null } = request.body;
      const { rows } = await pool.query(
        `insert into products (name, price, stock, category) values ($1, $2, $3, $4) returning ${columns}`,
        [name, price, stock, category],
      );
      return reply.code(201).header('location', `/products/${rows[0].id}`).send(rows[0]);
    },
  );
}

const app = Fastify({ logger: false });
app.get('/bench/stats', async () => ({ cpu: process.cpuUsage(), memory: process.memoryUsage() }));
const setups: Record<ServerKind, (app: FastifyInstance) => Promise<void>> = {
  kit,
  platformatic,
  floor,
};
await setups[kind](app);
await app.listen({ port: 0, host: '127.0.0.1' });
// The route prefix each kind uses, checked once so that a wrong URL cannot pass for a fast route.
const probe = await app.inject(`${ROUTES[kind].get}1`);
if (probe.statusCode !== 200)
  throw new Error(`${kind}: GET ${ROUTES[kind].get}1 answered ${probe.statusCode}: ${probe.body}`);
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.once(signal, () => void app.close().then(() => process.exit(0)));
console.log(`READY ${(app.server.address() as { port: number }).port}`);
