// Real service processes on an embedded database (fixtures/embedded-host.ts), for the tests of
// several processes on one PGlite directory or one SQLite file.
import path from 'node:path';
import { createInterface } from 'node:readline';
import {
  spawnFixture,
  startProcess,
  stopProcess,
  type ProcessHost,
} from '@kit/test-support/processes';

const fixture = path.join(import.meta.dirname, 'fixtures', 'embedded-host.ts');

/** A running service process. */
export type Host = ProcessHost<{ port: number; pid: number }>;

/** What a start that failed left: its exit code and stderr. */
export interface Refused {
  readonly code: number | null;
  readonly stderr: string;
}

/** Starts a host on `url` and resolves once it listens; rejects with its stderr when it exits first. */
export function startHost(url: string, env: Record<string, string> = {}): Promise<Host> {
  return startProcess(fixture, { DATABASE_URL: url, ...env });
}

/** Starts a host that is expected to fail start-up; resolves with its exit code and stderr (rejects if it listens). */
export async function refusedHost(url: string): Promise<Refused> {
  const { child, stderr } = spawnFixture(fixture, { DATABASE_URL: url });
  const lines = createInterface({ input: child.stdout! });
  return Promise.race([
    new Promise<never>((_, reject) =>
      lines.once('line', (line) => {
        child.kill('SIGKILL');
        reject(new Error(`the second host started: ${line}`));
      }),
    ),
    new Promise<Refused>((resolve) =>
      child.once('exit', (code) => resolve({ code, stderr: stderr() })),
    ),
  ]);
}

/** Ends a host: SIGTERM (it closes its app and exits) or SIGKILL (nothing runs); resolves once it exited. */
export function stopHost(
  host: Host | undefined,
  signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM',
): Promise<void> {
  return stopProcess(host, signal);
}

/** POSTs an entry; resolves with the status and, when created, its id. */
export async function post(
  host: Host,
  writer: string,
  seq: number,
): Promise<{ status: number; id?: number; retryAfter: string | null; ms: number }> {
  const asked = performance.now();
  const res = await fetch(`${host.base}/api/entries`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ writer, seq }),
  });
  const body = (await res.json()) as { id?: number };
  return {
    status: res.status,
    id: body.id,
    retryAfter: res.headers.get('retry-after'),
    ms: performance.now() - asked,
  };
}

/**
 * Writes from `concurrency` loops until `until()` says stop; every created entry's seq is in
 * `acknowledged`, every other answer's status in `refused`.
 */
export async function writeLoad(
  host: Host,
  writer: string,
  concurrency: number,
  until: () => boolean,
): Promise<{ acknowledged: number[]; refused: number[] }> {
  const acknowledged: number[] = [];
  const refused: number[] = [];
  let seq = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (!until()) {
        const mine = seq++;
        const answer = await post(host, writer, mine);
        if (answer.status === 201) acknowledged.push(mine);
        else refused.push(answer.status);
      }
    }),
  );
  return { acknowledged, refused };
}
