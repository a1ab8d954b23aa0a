// Where each server's main-thread CPU goes on one route of the AutoCrud benchmark, from a V8 CPU
// profile: busy time per request, self time by module and the top functions. The servers are
// `bench/crud/server.ts`, one after the other on the same generated table; autocannon drives them
// like `npm run bench:crud`. Shares within one profile are steadier than req/s on a shared machine.
//
//   npm run bench:crud:profile -- <route> [kinds] [seconds] --node=/path/to/node24
//   npm run bench:crud:profile -- page kit,floor,platformatic 8 --node=...
import { execFileSync } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { PostgresServer } from '@kit/test-support/postgres';
import { readMainProfile, spawnServer, stopServer } from '../harness.js';
import {
  CREATE_BODY,
  FILL,
  INDEXES,
  POOL_SIZE,
  ROUTES,
  ROWS,
  SCHEMA,
  type RouteId,
  type ServerKind,
} from './shape.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const route = (args[0] ?? 'page') as RouteId;
const kinds = (args[1] ?? 'kit,floor').split(',') as ServerKind[];
const seconds = Number(args[2] ?? 8);
const nodeBin = process.argv.find((a) => a.startsWith('--node='))?.slice(7) ?? process.execPath;
const version =
  nodeBin === process.execPath
    ? process.version
    : execFileSync(nodeBin, ['-v'], { encoding: 'utf8' }).trim();

const database = await PostgresServer.start();
for (const statement of [...SCHEMA, FILL, ...INDEXES]) await database.sql(statement);

/** The module a frame belongs to: a package, a Kit source file, or a Node internal. */
function moduleOf(url: string): string {
  const pkg = /node_modules\/(@[^/]+\/[^/]+|[^/]+)/.exec(url);
  if (pkg) return pkg[1] as string;
  const kit = /\/packages\/([^/]+\/src\/.+)$/.exec(url);
  if (kit) return `@kit/${kit[1]}`;
  return url === ''
    ? '(native: syscalls, GC, V8)'
    : url.startsWith('node:')
      ? url
      : path.basename(url);
}

async function profileOf(kind: ServerKind): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kit-crud-profile-'));
  const server = await spawnServer(
    nodeBin,
    [
      '--cpu-prof',
      `--cpu-prof-dir=${dir}`,
      '--conditions=kit-source',
      '--import',
      import.meta.resolve('tsx'),
      path.join(here, 'server.ts'),
      kind,
      database.url,
      String(POOL_SIZE),
    ],
    kind,
  );
  const paths = ROUTES[kind];
  const options =
    route === 'get'
      ? {
          url: `${server.base}${paths.get}1`,
          requests: [
            {
              setupRequest: (req: autocannon.Request) => ({
                ...req,
                path: `${paths.get}${1 + Math.floor(Math.random() * ROWS)}`,
              }),
            },
          ],
        }
      : route === 'create'
        ? {
            url: `${server.base}${paths.create}`,
            method: 'POST' as const,
            body: CREATE_BODY,
            headers: { 'content-type': 'application/json' },
          }
        : { url: `${server.base}${paths[route]}` };
  await autocannon({ ...options, connections: 32, duration: 3 }); // warm-up
  // Only the samples of the measured window count (not start-up, not the warm-up). V8's profile
  // clock and hrtime are both the monotonic clock, in µs here.
  const from = Number(process.hrtime.bigint() / 1000n);
  const run = await autocannon({ ...options, connections: 32, duration: seconds });
  const to = Number(process.hrtime.bigint() / 1000n);
  await stopServer(server);
  const profile = await readMainProfile(dir);

  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const byModule = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let busy = 0;
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    at += dt;
    const frame = byId.get(id)?.callFrame;
    if (at < from || at > to || !frame || frame.functionName === '(idle)') return;
    busy += dt;
    const module = moduleOf(frame.url);
    byModule.set(module, (byModule.get(module) ?? 0) + dt);
    const fn = `\`${frame.functionName || '(anonymous)'}\` ${module}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + dt);
  });
  const requests = run.requests.total;
  const perRequest = (us: number) => (us / requests).toFixed(1);
  const lines = [
    `### ${kind}, ${route}: ${Math.round(run.requests.average)} req/s under the profiler, ${perRequest(busy)} µs busy main thread per request`,
    '',
  ];
  lines.push('| module (self time) | µs per request | share |', '|---|---:|---:|');
  for (const [m, us] of [...byModule].sort((a, b) => b[1] - a[1]).slice(0, 16))
    lines.push(`| ${m} | ${perRequest(us)} | ${((100 * us) / busy).toFixed(1)}% |`);
  lines.push('', '| function (self time, top 12) | µs per request |', '|---|---:|');
  for (const [f, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 12))
    lines.push(`| ${f} | ${perRequest(us)} |`);
  console.log(`${lines.join('\n')}\n`);
}

console.log(
  `Servers on Node ${version}, ${os.cpus().length} cores, ${seconds} s of load per server (32 connections) after a 3 s warm-up; ${ROWS.toLocaleString('en-US')} rows.\n`,
);
for (const kind of kinds) await profileOf(kind);
await database.dispose();
process.exit(0);
