// The service under chaos: Kit with AutoCrud on a real PostgreSQL, in its own process, as a host
// runs it. Run with `node --conditions=kit-source --import tsx`. Environment: DATABASE_URL, and
// optionally POOL_SIZE, ACQUIRE_TIMEOUT_MS, STATEMENT_TIMEOUT_MS. Prints `{ "port": ... }` on
// stdout once listening; pino lines (warn and above) go to stderr for the driver to read.
import { Type } from '@sinclair/typebox';
import Fastify from 'fastify';
import { addKit, useKit } from '@kit/core';
import { addKitAutoCrud, AutoCrud, defineEntity, type KitAutoCrudOptions } from '@kit/autocrud';

export const Item = defineEntity({
  name: 'Item',
  table: 'chaos_items',
  schema: Type.Object({
    id: Type.Integer(),
    name: Type.String({ maxLength: 100 }),
    qty: Type.Integer({ minimum: 0 }),
  }),
  writable: ['name', 'qty'],
});

@AutoCrud(Item)
export class ItemEndpoint {}

function numberFrom(name: string): number | undefined {
  const value = process.env[name];
  return value === undefined || value === '' ? undefined : Number(value);
}

const app = Fastify({ logger: { level: 'warn', stream: process.stderr } });
addKit(app, [ItemEndpoint]);
const options: KitAutoCrudOptions = {
  poolSize: numberFrom('POOL_SIZE') ?? 10,
  connectTimeoutMs: 2000,
};
const acquireTimeoutMs = numberFrom('ACQUIRE_TIMEOUT_MS');
const statementTimeoutMs = numberFrom('STATEMENT_TIMEOUT_MS');
if (acquireTimeoutMs !== undefined) options.acquireTimeoutMs = acquireTimeoutMs;
if (statementTimeoutMs !== undefined) options.statementTimeoutMs = statementTimeoutMs;
addKitAutoCrud(app, process.env.DATABASE_URL as string, options);
await useKit(app);
await app.listen({ port: 0, host: '127.0.0.1' });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
console.log(JSON.stringify({ port: (app.server.address() as { port: number }).port }));
