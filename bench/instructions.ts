// Instructions per request, counted by valgrind's callgrind: `npm run bench:instructions --
// [--only=bare,floor,audit-async] [--requests=20000] [--warmup=5000] [--single-threaded] [--node=/path/to/node]`.
//
// On this shared 2-core machine the CPU time of one request drifts by 2x between runs, more than
// the differences an audit trail makes. Instructions do not drift: callgrind counts every
// instruction the server process executes in user space (all its threads: V8's compiler and GC
// helpers, libuv's pool), whatever the other tenants do. Each server runs under callgrind, gets a
// warm-up load (JIT tiers settle), its counters are zeroed, then a fixed number of requests is
// sent and the counters are dumped: the total over the requests is the whole user-space cost per
// request, not only the samples a profiler attributes to one file. Kernel work (the socket
// writes) is not counted: compare with the CPU µs of `npm run bench` for that part.
// What still varies is when V8 collects garbage and tiers code up: two counts of the same bare
// server, 2,000 requests each, differed by 6%; count enough requests that several collections
// fall inside (the default 20,000) and repeat a scenario to see its spread. `--single-threaded`
// (GC and compilation on the main thread) made the spread worse here (141k to 206k per request).
import { spawn, execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import autocannon from 'autocannon';

const here = path.dirname(fileURLToPath(import.meta.url));
const exec = promisify(execFile);
const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const requests = Number(arg('requests') ?? 20000);
const warmup = Number(arg('warmup') ?? 5000);
const nodeBin = arg('node') ?? process.execPath;

/** scenario id -> [server scenario, realistic route] */
const scenarios: Record<string, [string, boolean]> = {
  bare: ['bare', false],
  'hooks-empty': ['hooks-empty', false],
  'uuid-header': ['uuid-header', false],
  floor: ['floor', false],
  kit: ['kit', false],
  'audit-capture': ['kit-audit-capture', false],
  'audit-sync': ['kit-audit-sync', false],
  'audit-async': ['kit-audit-async', false],
  'audit-sync-noctx': ['kit-audit-sync-noctx', false],
  'audit-async-noctx': ['kit-audit-async-noctx', false],
  'pino-http': ['pino-http', false],
  'fastify-logging': ['fastify-logging', false],
  'bare-real': ['bare', true],
  'floor-real': ['floor', true],
  'audit-sync-real': ['kit-audit-sync', true],
  'audit-async-real': ['kit-audit-async', true],
  'pino-http-real': ['pino-http', true],
};
const only = arg('only')?.split(',') ?? ['bare', 'hooks-empty', 'uuid-header', 'floor', 'kit', 'audit-capture', 'audit-sync', 'audit-async', 'pino-http'];

const realBody = JSON.stringify({
  customerId: 'cus_4f1e2d3c',
  currency: 'EUR',
  lines: Array.from({ length: 9 }, (_, i) => ({ sku: `SKU-${100000 + i * 7919}`, name: `Stainless steel water bottle, 750 ml #${i}`, quantity: 1 + (i % 3), unitPrice: 12.5 + i })),
});
const realHeaders = {
  'content-type': 'application/json',
  accept: 'application/json',
  'accept-encoding': 'gzip, deflate, br',
  'accept-language': 'en-GB,en;q=0.9',
  'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36',
  authorization: 'Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6ImJlbmNoIn0.eyJzdWIiOiJiZW5jaCJ9.c2lnbmF0dXJl',
  cookie: 'session=5b2c8a1f0e9d4c7b; theme=dark',
  'x-forwarded-for': '203.0.113.7',
  'x-request-source': 'checkout-web',
};

async function drive(url: string, amount: number, real: boolean): Promise<number> {
  const r = await autocannon({ url, connections: 10, pipelining: 1, amount, timeout: 120, ...(real ? { method: 'POST' as const, body: realBody, headers: realHeaders } : {}) });
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return r.requests.total;
}

async function count(id: string): Promise<number> {
  const found = scenarios[id];
  if (!found) throw new Error(`unknown scenario ${id}; known: ${Object.keys(scenarios).join(', ')}`);
  const [server, real] = found;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kit-callgrind-'));
  const child = spawn(
    'valgrind',
    ['--tool=callgrind', `--callgrind-out-file=${dir}/cg.out`, '--smc-check=all-non-file', '--dump-instr=no', '--dump-line=no', '--compress-strings=no',
      nodeBin, ...(process.argv.includes('--single-threaded') ? ['--single-threaded'] : []), '--conditions=kit-source', '--import', import.meta.resolve('tsx'), path.join(here, 'server.ts'), server, ...(real ? ['real'] : [])],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /READY (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      child.once('exit', (code) => reject(new Error(`${id} exited with ${code}`)));
    });
    const url = `http://127.0.0.1:${port}${real ? '/api/orders' : '/api/hello'}`;
    await drive(url, warmup, real);
    await exec('callgrind_control', ['--zero', String(child.pid)]);
    const served = await drive(url, requests, real);
    await exec('callgrind_control', ['--dump', String(child.pid)]);
    // The dump is written asynchronously by the instrumented process: wait for its file.
    let dump: string | undefined;
    for (let i = 0; i < 600 && !dump; i++) {
      dump = (await readdir(dir)).find((f) => /^cg\.out\.\d+$/.test(f));
      if (!dump) await new Promise((r) => setTimeout(r, 100));
    }
    if (!dump) throw new Error(`${id}: no callgrind dump`);
    await new Promise((r) => setTimeout(r, 500));
    const text = await readFile(path.join(dir, dump), 'utf8');
    const total = /^(?:summary|totals):\s+(\d+)/m.exec(text);
    if (!total) throw new Error(`${id}: no totals in the dump`);
    return Number(total[1]) / served;
  } finally {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
}

const rows: Array<{ id: string; perRequest: number }> = [];
for (const id of only) {
  const perRequest = await count(id);
  rows.push({ id, perRequest });
  console.error(`[instructions] ${id}: ${Math.round(perRequest).toLocaleString('en-US')} instructions/request`);
}
const bare = rows.find((r) => r.id === 'bare')?.perRequest;
const bareReal = rows.find((r) => r.id === 'bare-real')?.perRequest;
const nodeVersion = nodeBin === process.execPath ? process.version : (await exec(nodeBin, ['-v'])).stdout.trim();
console.log(`Node ${nodeVersion}, ${requests} requests after ${warmup} warm-up requests, 10 connections\n`);
console.log('| scenario | instructions/request | over bare |');
console.log('|---|---:|---:|');
for (const r of rows) {
  const base = r.id.endsWith('-real') ? bareReal : bare;
  const over = base === undefined ? '' : `${r.perRequest >= base ? '+' : ''}${Math.round(r.perRequest - base).toLocaleString('en-US')}`;
  console.log(`| ${r.id} | ${Math.round(r.perRequest).toLocaleString('en-US')} | ${over} |`);
}
