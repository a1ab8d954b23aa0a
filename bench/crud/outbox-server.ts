// One Kit AutoCrud server of the outbox bench (outbox.ts), in its own process: the bench's
// `products` entity on PostgreSQL, with the outbox on (one in-process subscriber that does
// nothing, so the dispatcher delivers and deletes every record) or off.
// Usage: outbox-server.ts <on|off|seam> <postgres-url> <pool-size>; prints `READY <port>` once listening.
// Also answers GET /bench/stats (its CPU time) and GET /bench/outbox (the dispatcher's counters).
import Fastify from 'fastify';
import { addKit, useKit } from '@kit/core';
import { addKitAutoCrud, AutoCrud, CrudOperations } from '@kit/autocrud';
import { catalogEntity } from './shape.js';

const [mode, url, poolText] = process.argv.slice(2) as ['on' | 'off' | 'seam', string, string];
const Product = catalogEntity();
@AutoCrud(Product, { operations: CrudOperations.All | CrudOperations.Patch })
class ProductsEndpoint {}

const app = Fastify({ logger: false });
app.get('/bench/stats', async () => ({ cpu: process.cpuUsage(), memory: process.memoryUsage() }));
addKit(app, [ProductsEndpoint]);
// The outbox's tables: made by this server (it starts first).
const crud = addKitAutoCrud(app, url, {
  poolSize: Number(poolText),
  ...(mode === 'on'
    ? { outbox: { dispatch: process.env.BENCH_OUTBOX_DISPATCH !== '0' }, createTables: true }
    : {}),
});
if (mode === 'on') crud.onChange(Product, () => undefined, { name: 'bench' });
// `seam`: a change sink that writes nothing, for what the write's transaction and its read of the replaced row cost alone.
if (mode === 'seam') crud.repository(Product).addChangeSink(async () => undefined);
app.get('/bench/outbox', async () => crud.outboxStats() ?? {});
await useKit(app);
await app.listen({ port: 0, host: '127.0.0.1' });
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.once(signal, () => void app.close().then(() => process.exit(0)));
console.log(`READY ${(app.server.address() as { port: number }).port}`);
