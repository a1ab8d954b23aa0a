// The health fixture host (fixtures/health-host/) as a real process in production mode: the one
// start the health process tests share, ready once it logs that it listens, killed when the test
// ends so that a failed assertion leaves no process behind.
import path from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startProcess, stopProcess, type ProcessHost } from '@kit/test-support/processes';

const FIXTURE = fileURLToPath(new URL('../fixtures/health-host/', import.meta.url));

/** Starts `script` of the health fixture with `env` over `NODE_ENV=production`. */
export async function startHealthHost(
  t: TestContext,
  script: 'host.ts' | 'load-host.ts',
  env: Record<string, string>,
): Promise<ProcessHost> {
  const host = await startProcess(
    path.join(FIXTURE, script),
    { NODE_ENV: 'production', ...env },
    {
      cwd: FIXTURE,
      startMs: 20_000,
      ready: (line) =>
        line.includes('"kitHost":"listening"') ? (JSON.parse(line) as { port: number }) : undefined,
    },
  );
  t.after(() => stopProcess(host, 'SIGKILL'));
  return host;
}
