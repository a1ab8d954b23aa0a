// @test-lines: once - heavy: builds and starts the image once per CI run, on the line the image names
// The container image without a container engine (none runs on the machines this project is
// tested on): deploy/Dockerfile's steps run as a script on a fresh directory (fleet/dockerfile.ts),
// the runtime stage is checked for what it must and must not hold, and its CMD is started the way
// a container runtime starts it: in a new PID namespace, so `node` is PID 1, as an unprivileged
// user. It answers its probes, and SIGTERM sent from outside the namespace (as the kubelet's stop
// does) runs Kit's graceful shutdown: a PID 1 with no handler would ignore it, as the control
// process shows.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { heavy } from '@kit/test-support/heavy';
import { PostgresServer, skipPostgres } from '@kit/test-support/postgres';
import { freePort } from '@kit/test-support/ports';
import { RedisServer, skipRedis } from '@kit/test-support/redis';
import { until } from '@kit/test-support/until';
import { buildFromDockerfile, type BuiltImage } from './fleet/dockerfile.ts';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const inCi = process.env.CI === 'true';
// A new PID namespace needs CAP_SYS_ADMIN (root here and in CI).
const canUnshare = spawnSync('unshare', ['--pid', '--fork', 'true']).status === 0;
const skip =
  skipPostgres ||
  skipRedis ||
  (!canUnshare && !inCi ? 'unshare --pid is not available (needs root)' : false);

/** The host pid of the process that is PID 1 in the namespace `unshare --fork` made. */
async function pidOne(unshare: ChildProcess): Promise<number> {
  const { value: children } = await until(
    'the child unshare started',
    () =>
      readFileSync(`/proc/${unshare.pid}/task/${unshare.pid}/children`, 'utf8').trim() || undefined,
    { timeoutMs: 5000, intervalMs: 50 },
  );
  return Number(children.split(' ')[0]);
}

function status(pid: number): Record<string, string> {
  return Object.fromEntries(
    readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .filter((l) => l.includes(':'))
      .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]),
  );
}

async function get(url: string): Promise<{ status: number; body: string } | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return { status: res.status, body: await res.text() };
  } catch {
    return undefined;
  }
}

heavy('deploy/Dockerfile', () => {
  if (skip) {
    it('deploy/Dockerfile', (t) => t.skip(skip));
    return;
  }
  describe('deploy/Dockerfile, built as a script and started as a container would start it', () => {
    let workspace: string;
    let image: BuiltImage;
    let database: PostgresServer;
    let redis: RedisServer;

    before(async () => {
      workspace = mkdtempSync(path.join(tmpdir(), 'kit-image-'));
      // The unprivileged user must reach the image's files, as in an image.
      chmodSync(workspace, 0o755);
      // All settled and each assigned, so that `after` stops the servers even when the build fails.
      const started = await Promise.allSettled([
        buildFromDockerfile({
          dockerfile: path.join(REPO, 'deploy', 'Dockerfile'),
          context: REPO,
          workspace,
          env: { npm_config_prefer_offline: 'true', npm_config_update_notifier: 'false' },
        }).then((built) => (image = built)),
        PostgresServer.start().then((server) => (database = server)),
        RedisServer.start().then((server) => (redis = server)),
      ]);
      for (const s of started) if (s.status === 'rejected') throw s.reason;
    });
    after(async () => {
      if (workspace) rmSync(workspace, { recursive: true, force: true });
      await Promise.all([database?.dispose(), redis?.dispose()]);
    });

    it('the runtime stage: compiled JavaScript and production dependencies only, a non-root user, node started directly', (t) => {
      for (const step of image.steps)
        t.diagnostic(`${step.stage}: ${step.command} (${step.ms} ms)`);
      const app = path.join(image.root, 'app');
      const modules = readdirSync(path.join(app, 'node_modules'));
      for (const dev of [
        'typescript',
        'tsx',
        'eslint',
        'autocannon',
        '@types',
        'openapi-typescript',
      ])
        assert.ok(!modules.includes(dev), `${dev} is a dev dependency`);
      for (const needed of ['fastify', 'pg', 'ioredis', 'kysely', 'prom-client', '@kit'])
        assert.ok(modules.includes(needed), needed);
      for (const dir of [
        'packages/core/src',
        'packages/autocrud/src',
        'examples/sample-api/src',
        'examples/sample-api/test',
      ])
        assert.ok(!existsSync(path.join(app, dir)), `${dir} stays out`);
      assert.ok(existsSync(path.join(app, 'examples/sample-api/dist/main.js')));
      assert.deepEqual(
        image.cmd,
        ['node', 'dist/main.js'],
        'exec form: node is PID 1, no npm or shell in between',
      );
      assert.ok(
        image.user !== undefined && image.user !== 'root' && image.user !== '0',
        `USER ${image.user}`,
      );
      assert.equal(image.env.NODE_ENV, 'production');
      assert.equal(image.stopSignal, 'SIGTERM');
      assert.deepEqual(image.exposed, [image.env.PORT]);
      // The runner stands the Node running it for the base image's: in CI that is the full line,
      // which the image must name.
      const line = /^ARG NODE_VERSION=(\d+)$/m.exec(
        readFileSync(path.join(REPO, 'deploy', 'Dockerfile'), 'utf8'),
      )?.[1];
      if (inCi)
        assert.equal(
          process.versions.node.split('.')[0],
          line,
          'the image runs the Node line CI runs the whole suite on',
        );
      else t.diagnostic(`the image names Node ${line}; this run is on ${process.version}`);
    });

    it('started as PID 1 of its own namespace, unprivileged: answers its probes, and SIGTERM from outside drains it and exits 0', async (t) => {
      const port = await freePort();
      const env = {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        ...image.env,
        HOST: '127.0.0.1',
        PORT: String(port),
        DATABASE_URL: database.url,
        REDIS_URL: redis.url,
        CURSOR_SECRET: 'deploy-image-test-cursor-secret-32-chars',
      };
      const [command, ...args] = image.cmd as [string, ...string[]];
      const nodeBin = command === 'node' ? process.execPath : command;
      const child = spawn(
        'unshare',
        [
          '--pid',
          '--fork',
          '--kill-child',
          'setpriv',
          '--reuid=65534',
          '--regid=65534',
          '--clear-groups',
          nodeBin,
          ...args,
        ],
        {
          cwd: path.join(image.root, image.workdir),
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
      const found = pidOne(child);
      // PID 1 first: unshare's --kill-child does not survive setpriv's change of user.
      t.after(async () => {
        const one = await found.catch(() => undefined);
        if (one !== undefined && existsSync(`/proc/${one}`)) process.kill(one, 'SIGKILL');
        child.kill('SIGKILL');
      });

      const pid = await found;
      const base = `http://127.0.0.1:${port}`;
      const { value: live } = await until(
        '/livez',
        async () => ((await get(`${base}/livez`))?.status === 200 ? true : undefined),
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      assert.ok(live);
      const proc = status(pid);
      assert.match(
        proc.NSpid ?? '',
        /\s1$/,
        `node is PID 1 in its namespace (NSpid ${proc.NSpid})`,
      );
      assert.match(proc.Uid ?? '', /^65534\b/, 'and runs unprivileged');
      assert.match(
        readFileSync(`/proc/${pid}/cmdline`, 'utf8'),
        /dist\/main\.js/,
        "the image's CMD",
      );
      await until(
        '/healthz 200',
        async () => ((await get(`${base}/healthz`))?.status === 200 ? true : undefined),
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      assert.equal((await get(`${base}/api/products?pageSize=1`))?.status, 200);
      const metrics = await get(`${base}/metrics`);
      assert.equal(metrics?.status, 200);
      assert.match(
        metrics!.body,
        /kit_http_request_duration_seconds_count\{method="GET",route="\/api\/products",status_class="2xx"\} 1/,
      );

      const signalled = Date.now();
      process.kill(pid, 'SIGTERM');
      const { value: shuttingDown } = await until(
        '/healthz 503',
        async () => {
          const r = await get(`${base}/healthz`);
          return r?.status === 503 ? r.body : undefined;
        },
        { timeoutMs: 5000, intervalMs: 100 },
      );
      assert.match(shuttingDown, /shutting down/);
      assert.equal(
        (await get(`${base}/livez`))?.status,
        200,
        'still serving through the shutdown delay',
      );
      const code = await exited;
      t.diagnostic(`SIGTERM -> exit ${code} in ${Date.now() - signalled} ms`);
      assert.equal(code, 0, out.slice(-3000));
      assert.match(out, /"CorrelationId"/, 'the audit trail was written');
    });

    it('the control: a PID 1 without a SIGTERM handler ignores SIGTERM (what Kit handling the signal avoids)', async (t) => {
      const child = spawn(
        'unshare',
        ['--pid', '--fork', '--kill-child', process.execPath, '-e', 'setInterval(() => {}, 1000)'],
        { stdio: 'ignore' },
      );
      const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
      t.after(() => child.kill('SIGKILL'));
      const pid = await pidOne(child);
      await sleep(300);
      process.kill(pid, 'SIGTERM');
      await sleep(1500);
      assert.equal(existsSync(`/proc/${pid}`), true, 'still running after SIGTERM');
      process.kill(pid, 'SIGKILL');
      await exited;
    });
  });
});
