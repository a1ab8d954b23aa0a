// Instructions per request of one AutoCrud route, counted by valgrind's callgrind: the whole
// request in one process (inject, Kit, the asynchronous audit trail, AutoCrud and node:sqlite in
// memory, whose work is counted too), instrumentation switched on after a warm-up. Counts do not
// depend on the machine's load, so a change can be compared before and after on a shared machine;
// they do vary with when V8 compiles and collects (repeat a run to see the spread).
//
//   node --conditions=kit-source --import tsx bench/crud/instructions.ts --route=get|list|fields|create|put|patch \
//     [--requests=2000] [--warmup=1500] [--node=/path/to/node (>= 22.13, for node:sqlite)]
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import Fastify, { type InjectOptions } from 'fastify';
import { addKit, useKit } from '@kit/core';
import { addKitAutoCrud, AutoCrud, CrudOperations, defineEntity } from '@kit/autocrud';

const exec = promisify(execFile);
const arg = (name: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const route = arg('route') ?? 'get';
const requests = Number(arg('requests') ?? 2000);
const warmup = Number(arg('warmup') ?? 1500);

const Product = defineEntity({
  name: 'Product',
  table: 'products',
  schema: {
    type: 'object',
    required: ['id', 'name', 'price'],
    properties: {
      id: { type: 'integer' },
      name: { type: 'string', maxLength: 200 },
      price: { type: 'number' },
      stock: { type: ['integer', 'null'] },
      category: { type: ['string', 'null'] },
    },
  } as const,
  writable: ['name', 'price', 'stock', 'category'],
});
@AutoCrud(Product, { operations: CrudOperations.All | CrudOperations.Patch })
class ProductsEndpoint {}

/** Under callgrind: warm up, count `requests` requests, dump. */
async function child(): Promise<void> {
  const app = Fastify();
  addKit(app, [ProductsEndpoint], (opt) => opt.configureAuditTrail((a) => (a.asyncWrite = true)));
  addKitAutoCrud(app, 'sqlite::memory:', { createTables: true });
  await useKit(app);
  await app.ready();
  for (let i = 0; i < 500; i++)
    await app.inject({
      method: 'POST',
      url: '/api/products',
      payload: { name: `p${i}`, price: (i * 7) % 100, stock: i % 5, category: 'tools' },
    });
  const body = JSON.stringify({ name: 'Bench widget', price: 512.5, stock: 3, category: 'tools' });
  // PUT writes the whole body, PATCH one field of it (a JSON Merge Patch), on the same row.
  const requestOf: Record<string, InjectOptions | string> = {
    get: '/api/products/7',
    list: '/api/products?filter[price][lt]=20&sort=-price&pageSize=20',
    fields: '/api/products?filter[price][lt]=20&sort=-price&pageSize=20&fields=id,name,price',
    create: {
      method: 'POST',
      url: '/api/products',
      headers: { 'content-type': 'application/json' },
      payload: body,
    },
    put: {
      method: 'PUT',
      url: '/api/products/7',
      headers: { 'content-type': 'application/json' },
      payload: body,
    },
    patch: {
      method: 'PATCH',
      url: '/api/products/7',
      headers: { 'content-type': 'application/merge-patch+json' },
      payload: JSON.stringify({ price: 512.5 }),
    },
  };
  const request = requestOf[route];
  if (request === undefined)
    throw new Error(`--route=${route}: one of ${Object.keys(requestOf).join(', ')}`);
  const one = async () => {
    const res = await app.inject(request);
    if (res.statusCode >= 300) throw new Error(`${route}: ${res.statusCode} ${res.body}`);
  };
  for (let i = 0; i < warmup; i++) await one();
  // callgrind_control talks to this process while it waits here, idle.
  await exec('callgrind_control', ['--instr=on', String(process.pid)]);
  await exec('callgrind_control', ['--zero', String(process.pid)]);
  for (let i = 0; i < requests; i++) await one();
  await exec('callgrind_control', ['--dump', String(process.pid)]);
  await app.close();
}

async function parent(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kit-crud-callgrind-'));
  const node = arg('node') ?? process.execPath;
  try {
    await exec(
      'valgrind',
      [
        '--tool=callgrind',
        `--callgrind-out-file=${path.join(dir, 'cg')}`,
        '--instr-atstart=no',
        '--smc-check=all-non-file',
        '--dump-instr=no',
        '--dump-line=no',
        node,
        '--conditions=kit-source',
        '--import',
        import.meta.resolve('tsx'),
        fileURLToPath(import.meta.url),
        '--child',
        `--route=${route}`,
        `--requests=${requests}`,
        `--warmup=${warmup}`,
      ],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    let total = 0;
    for (const file of await readdir(dir)) {
      const text = await readFile(path.join(dir, file), 'utf8');
      const found = /^(?:summary|totals): (\d+)/m.exec(text);
      if (found) total = Math.max(total, Number(found[1]));
    }
    console.log(
      `${route}: ${Math.round(total / requests)} instructions per request (${requests} requests after ${warmup} of warm-up, ${(await exec(node, ['-v'])).stdout.trim()})`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await (process.argv.includes('--child') ? child() : parent());
