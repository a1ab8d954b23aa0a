// `npm start` time: from spawning the command to the first answer of /livez, and to /healthz 200
// (ready). Also how long /healthz answered 503 `startup` (observed by the probe), and the longest
// gap between two probe answers (how long the event loop was blocked while the probes waited).
//
//   node --import tsx bench/start-time.ts [--runs=5] [--node=/path/to/node] [--root=<checkout>] [--env=KEY=VALUE ...] [--direct]
//
// `--node` runs the service (and npm) on another Node binary; `--root` runs another checkout's
// sample (an older commit, for a before/after pair); `--direct` spawns node on the sample's entry
// instead of `npm start` (npm's own start-up left out). Each run gets a free port; the sample's
// defaults otherwise (DATABASE_URL unset: the embedded PGlite). Prints one JSON line per run, then
// the medians.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

const arg = (name: string): string | undefined =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const root = path.resolve(
  arg('root') ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'),
);
const runs = Number(arg('runs') ?? 5);
const nodeBin = arg('node') ?? process.execPath;
const direct = process.argv.includes('--direct');
const extraEnv = Object.fromEntries(
  process.argv
    .filter((a) => a.startsWith('--env='))
    .map((a) => a.slice(6).split(/=(.*)/s).slice(0, 2) as [string, string]),
);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Run {
  livezMs: number;
  readyMs: number;
  /** Between the first /healthz answer and the first 200: how long the gate was seen closed. */
  startupSeenMs: number;
  /** The longest wait for one probe answer once the server listened (event loop blocked). */
  longestProbeMs: number;
}

async function probe(url: string): Promise<number | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return undefined;
  }
}

async function once(): Promise<Run> {
  const port = await freePort();
  const env = {
    ...process.env,
    PORT: String(port),
    LOG_LEVEL: 'silent',
    NODE_ENV: 'production',
    ...extraEnv,
    PATH: `${path.dirname(nodeBin)}:${process.env.PATH}`,
  };
  const started = performance.now();
  const child = direct
    ? spawn(nodeBin, ['--conditions=kit-source', '--import', 'tsx', 'src/main.ts'], {
        cwd: path.join(root, 'examples/sample-api'),
        env,
        stdio: 'ignore',
      })
    : spawn('npm', ['start'], { cwd: root, env, stdio: 'ignore', detached: true });
  const base = `http://127.0.0.1:${port}`;
  let livezMs: number | undefined;
  let firstHealth: number | undefined;
  let readyMs: number | undefined;
  let longestProbeMs = 0;
  try {
    // /livez until it answers (connection refused until the server listens).
    while (livezMs === undefined) {
      if (performance.now() - started > 120_000) throw new Error('no /livez answer within 120 s');
      if ((await probe(`${base}/livez`)) !== undefined) livezMs = performance.now() - started;
      else await sleep(5);
    }
    while (readyMs === undefined) {
      if (performance.now() - started > 120_000) throw new Error('not ready within 120 s');
      const asked = performance.now();
      const status = await probe(`${base}/healthz`);
      const answered = performance.now();
      longestProbeMs = Math.max(longestProbeMs, answered - asked);
      firstHealth ??= answered - started;
      if (status === 200) readyMs = answered - started;
      else await sleep(5);
    }
  } finally {
    if (direct) child.kill('SIGKILL');
    else process.kill(-child.pid!, 'SIGKILL');
    await new Promise((resolve) =>
      child.exitCode !== null || child.signalCode !== null
        ? resolve(undefined)
        : child.once('exit', resolve),
    );
  }
  return { livezMs, readyMs, startupSeenMs: readyMs - (firstHealth ?? readyMs), longestProbeMs };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const round = (n: number): number => Math.round(n);

const results: Run[] = [];
for (let i = 0; i < runs; i++) {
  const run = await once();
  results.push(run);
  process.stdout.write(
    `${JSON.stringify({ run: i + 1, livezMs: round(run.livezMs), readyMs: round(run.readyMs), startupSeenMs: round(run.startupSeenMs), longestProbeMs: round(run.longestProbeMs) })}\n`,
  );
}
const summary = {
  node: await new Promise<string>((resolve) => {
    const child = spawn(nodeBin, ['-v']);
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', () => resolve(out.trim()));
  }),
  command: direct ? 'node src/main.ts' : 'npm start',
  root,
  env: extraEnv,
  runs,
  livezMs: round(median(results.map((r) => r.livezMs))),
  readyMs: round(median(results.map((r) => r.readyMs))),
  startupSeenMs: round(median(results.map((r) => r.startupSeenMs))),
  longestProbeMs: round(median(results.map((r) => r.longestProbeMs))),
};
process.stdout.write(`${JSON.stringify({ median: summary })}\n`);
