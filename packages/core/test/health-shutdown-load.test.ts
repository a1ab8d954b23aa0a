// @test-lines: every - health probes: sockets, signals and shutdown on this line
// Keep-alive load through SIGTERM, in a real child process: no request a client sent on an open
// connection may be lost when the server shuts down. Two clients drive the load: autocannon (100
// connections, sends its next request the moment a response arrives and ignores
// `Connection: close`) and Node's keep-alive http.Agent (honours `Connection: close`). Each run
// counts what the clients saw and what the audit trail wrote; the counts are printed with
// t.diagnostic for the record.
import assert from 'node:assert/strict';
import http from 'node:http';
import { test, type TestContext } from 'node:test';
import autocannon from 'autocannon';
import { printed, type ProcessHost } from '@kit/test-support/processes';
import { startHealthHost } from './support/health-host.ts';
import { sleep } from './support/http.ts';

const SHUTDOWN_DELAY_MS = 1000;

interface Counts {
  /** Responses with a 2xx status. */
  ok: number;
  non2xx: number;
  /** ECONNRESET, EPIPE, "socket hang up": a request sent on an open connection and lost. */
  resets: number;
  /** ECONNREFUSED: the connection was refused before any request went out. */
  refused: number;
  other: Record<string, number>;
}

function counts(): Counts {
  return { ok: 0, non2xx: 0, resets: 0, refused: 0, other: {} };
}

function countError(c: Counts, err: NodeJS.ErrnoException): void {
  if (err.code === 'ECONNREFUSED') c.refused += 1;
  else if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || /socket hang up/.test(err.message))
    c.resets += 1;
  else c.other[err.code ?? err.message] = (c.other[err.code ?? err.message] ?? 0) + 1;
}

/** A host started for `connections` clients, its shutdown delay SHUTDOWN_DELAY_MS. */
function startLoadHost(t: TestContext, connections: number): Promise<ProcessHost> {
  return startHealthHost(t, 'load-host.ts', {
    SHUTDOWN_DELAY_MS: String(SHUTDOWN_DELAY_MS),
    CONNECTIONS: String(connections),
  });
}

/** What either client must have seen: served through the delay, nothing cut, no 503, exit 0. */
function assertNothingLost(c: Counts, okBeforeSignal: number, exitCode: number | null): void {
  assert.equal(exitCode, 0);
  assert.ok(
    c.ok > okBeforeSignal,
    'requests were served after the signal, through the shutdown delay',
  );
  assert.equal(c.resets, 0, 'no request sent on an open connection was cut');
  assert.equal(c.non2xx, 0, 'no 503 from a closing server');
  assert.deepEqual(c.other, {});
}

function assertEveryResponseAudited(c: Counts, audited: number): void {
  assert.equal(
    audited,
    c.ok + c.non2xx,
    'every response the clients received was audited, and nothing else',
  );
}

/** Audit entries the host wrote for the API route (Default format: structured field `Path`). */
function auditedApiRequests(lines: readonly string[]): number {
  let n = 0;
  for (const line of lines) {
    if (!line.startsWith('{')) continue;
    let entry: { Path?: unknown };
    try {
      entry = JSON.parse(line) as { Path?: unknown };
    } catch (err) {
      // A torn or interleaved line is a defect of the writers: show it whole.
      throw new Error(`a stdout line is not one JSON entry (${(err as Error).message}):\n${line}`, {
        cause: err,
      });
    }
    if (entry.Path === '/api/work') n += 1;
  }
  return n;
}

function report(
  t: TestContext,
  client: string,
  c: Counts,
  audited: number,
  exitCode: number | null,
): void {
  t.diagnostic(
    `${client}: ${c.ok} x 2xx, ${c.non2xx} non-2xx, ${c.resets} resets, ${c.refused} refused before sending (server gone), ` +
      `other errors ${JSON.stringify(c.other)}; audit entries for /api/work: ${audited}; exit code ${exitCode}`,
  );
}

await test('autocannon, 100 keep-alive connections, through SIGTERM: 0 resets, 0 non-2xx, one audit entry per response', async (t) => {
  const connections = 100;
  const host = await startLoadHost(t, connections);
  const c = counts();
  let load!: autocannon.Instance;
  const finished = new Promise<void>((resolve) => {
    load = autocannon({ url: `${host.base}/api/work`, connections, duration: 60 }, () => resolve());
  });
  load.on('response', (_client, statusCode) => {
    if (statusCode >= 200 && statusCode < 300) c.ok += 1;
    else c.non2xx += 1;
  });
  load.on('reqError', (err: NodeJS.ErrnoException) => countError(c, err));
  // Steady state first: every connection accepted and in use.
  await printed(host, '"kitHost":"connections"', 30_000);
  await sleep(500);
  const okBeforeSignal = c.ok;
  host.child.kill('SIGTERM');
  // Once stdout is closed: every audit line the host wrote has been read.
  const { code: exitCode } = await host.closed;
  load.stop();
  await finished;
  const audited = auditedApiRequests(host.lines());
  report(t, 'autocannon', c, audited, exitCode);

  assertNothingLost(c, okBeforeSignal, exitCode);
  assertEveryResponseAudited(c, audited);
});

await test("Node's keep-alive http.Agent, 50 connections, through SIGTERM: 0 resets, 0 non-2xx, one audit entry per response", async (t) => {
  const connections = 50;
  const host = await startLoadHost(t, connections);
  const c = counts();
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  t.after(() => agent.destroy());
  const get = (): Promise<number> =>
    new Promise((resolve, reject) => {
      http
        .get(`${host.base}/api/work`, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('error', reject);
        })
        .on('error', reject);
    });
  // Each loop sends its next request as soon as the previous one is answered, until the server
  // is gone (a refused connection).
  const loop = async (): Promise<void> => {
    for (;;) {
      try {
        const status = await get();
        if (status >= 200 && status < 300) c.ok += 1;
        else c.non2xx += 1;
      } catch (err) {
        countError(c, err as NodeJS.ErrnoException);
        if ((err as NodeJS.ErrnoException).code === 'ECONNREFUSED') return;
      }
    }
  };
  const loops = Array.from({ length: connections }, loop);
  await printed(host, '"kitHost":"connections"', 30_000);
  await sleep(500);
  const okBeforeSignal = c.ok;
  host.child.kill('SIGTERM');
  // Once stdout is closed: every audit line the host wrote has been read.
  const { code: exitCode } = await host.closed;
  await Promise.all(loops);
  const audited = auditedApiRequests(host.lines());
  report(t, 'http.Agent', c, audited, exitCode);

  assertNothingLost(c, okBeforeSignal, exitCode);
  assert.equal(
    c.refused,
    connections,
    'each client loop ended on a refused connection once the server was gone',
  );
  assertEveryResponseAudited(c, audited);
});
