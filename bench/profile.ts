// Where a server's CPU time goes under load, from a V8 CPU profile: the share of the main thread's
// busy time spent in Kit's audit code (and everything it calls), in the async hooks behind
// AsyncLocalStorage, in pino and in the rest. Shares within one profile do not depend on how fast
// the machine happens to be, which req/s on a shared machine does.
//
//   npm run bench:profile -- kit-audit-sync [seconds] [--node=/path/to/node]
//
// The server is `bench/server.ts <scenario>`; autocannon drives it like `npm run bench`.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { readyPort, type CpuProfile, readMainProfile } from './harness.js';

type ProfileNode = CpuProfile['nodes'][number];

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const scenario = args[0] ?? 'kit-audit-sync';
const seconds = Number(args[1] ?? 8);
const nodeBin = process.argv.find((a) => a.startsWith('--node='))?.slice(7) ?? process.execPath;

const dir = await mkdtemp(path.join(os.tmpdir(), 'kit-profile-'));
const child = spawn(
  nodeBin,
  [
    '--cpu-prof',
    `--cpu-prof-dir=${dir}`,
    '--conditions=kit-source',
    '--import',
    import.meta.resolve('tsx'),
    path.join(here, 'server.ts'),
    scenario,
  ],
  {
    stdio: ['ignore', 'pipe', 'ignore'],
  },
);
const port = await readyPort(child, 'server');
const url = `http://127.0.0.1:${port}/api/hello`;
await autocannon({ url, connections: 100, duration: 2 }); // warm-up
const run = await autocannon({ url, connections: 100, duration: seconds });
const exited = new Promise((r) => child.once('exit', r));
child.kill('SIGTERM');
await exited;

const profile = await readMainProfile(dir);

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

type Category = 'audit' | 'asyncHooks' | 'pino' | 'gc' | 'startup' | 'rest';
const isAudit = (url: string) =>
  url.includes('/core/src/audit/') || url.includes('/core/dist/audit/');
const isAsyncHooks = (url: string) =>
  url === 'node:async_hooks' ||
  url === 'node:internal/async_hooks' ||
  url === 'node:internal/async_local_storage/async_hooks';
const isPino = (url: string) => /\/node_modules\/(pino|sonic-boom|pino-http)\//.test(url);
const isStartup = (url: string) => /esm\/|cjs\/loader|\/tsx\//.test(url);

// Fastify's own code, the route handler and Node's HTTP machinery: what a request does anyway.
const isRequestPath = (url: string) =>
  /\/node_modules\/(fastify|find-my-way|light-my-request)\/|\/bench\/server\.ts$|^node:_http_/.test(
    url,
  );

// Walking up from the function a sample was taken in: if Kit's audit code comes before any of
// the request path, the sample is the audit's, whatever the audit called (pino, JSON, crypto, the
// destination write). Fastify hooks hand over with `done()`, so the rest of the request runs
// inside the audit's onRequest frame; the request-path frames in between keep it out of the
// audit's share. Otherwise the sample goes by its own function, so async hooks count only their
// own time, not the callbacks they run.
function categorise(leaf: number): Category {
  const stack: ProfileNode[] = [];
  for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id))
    stack.push(byId.get(id) as ProfileNode);
  const own = stack[0]?.callFrame ?? { functionName: '', url: '' };
  if (own.functionName === '(garbage collector)') return 'gc';
  if (stack.some((n) => isStartup(n.callFrame.url))) return 'startup';
  for (const n of stack) {
    if (isAudit(n.callFrame.url)) return 'audit';
    if (isRequestPath(n.callFrame.url)) break;
  }
  if (isAsyncHooks(own.url)) return 'asyncHooks';
  if (isPino(own.url)) return 'pino';
  return 'rest';
}

const ms: Record<Category | 'idle', number> = {
  audit: 0,
  asyncHooks: 0,
  pino: 0,
  gc: 0,
  startup: 0,
  rest: 0,
  idle: 0,
};
// Within the audit's share: the functions the samples were taken in.
const auditLeaves = new Map<string, number>();
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i] as number;
  const dt = (profile.timeDeltas[i] ?? 0) / 1000;
  const frame = byId.get(id)?.callFrame;
  if (frame?.functionName === '(idle)' || frame?.functionName === '(program)') {
    ms.idle += dt;
    continue;
  }
  const category = categorise(id);
  ms[category] += dt;
  if (category === 'audit' && frame) {
    const key = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/node_modules\//, '').replace(/^.*\/src\//, 'src/') || '(native)'}`;
    auditLeaves.set(key, (auditLeaves.get(key) ?? 0) + dt);
  }
}
const busy = ms.audit + ms.asyncHooks + ms.pino + ms.gc + ms.rest;
const pct = (v: number) => `${((100 * v) / busy).toFixed(1)}%`;
const requests = run.requests.total;
const row = (label: string, v: number) =>
  `| ${label} | ${v.toFixed(0)} | ${pct(v)} | ${((1000 * v) / requests).toFixed(2)} |`;
const version =
  nodeBin === process.execPath
    ? process.version
    : execFileSync(nodeBin, ['-v'], { encoding: 'utf8' }).trim();
console.log(
  `${scenario} on ${version}: ${requests.toLocaleString('en-US')} requests in ${seconds} s under the profiler (which slows the server).`,
);
console.log('');
console.log('| main thread, under load | ms | share of busy | µs per request |');
console.log('|---|---:|---:|---:|');
console.log(
  row("Kit's audit code and what it calls (pino, JSON, the destination write)", ms.audit),
);
console.log(
  row('async hooks, own time (AsyncLocalStorage propagation) outside that', ms.asyncHooks),
);
console.log(
  row("pino outside Kit's audit (Fastify's per-request child logger; pino-http's line)", ms.pino),
);
console.log(row('garbage collector', ms.gc));
console.log(row('everything else (Fastify, HTTP parsing, socket writes, ...)', ms.rest));
console.log(
  `| busy total | ${busy.toFixed(0)} | 100% | ${((1000 * busy) / requests).toFixed(2)} |`,
);
console.log('');
console.log("Where the audit's share goes (the function each sample was taken in; top 12):");
console.log('');
console.log('| function | ms | µs per request |');
console.log('|---|---:|---:|');
for (const [key, v] of [...auditLeaves].sort((a, b) => b[1] - a[1]).slice(0, 12))
  console.log(`| \`${key}\` | ${v.toFixed(0)} | ${((1000 * v) / requests).toFixed(2)} |`);
