// The sample compiled as the container image compiles it (deploy/Dockerfile: `tsc -p
// examples/sample-api/tsconfig.build.json` with the repository's TypeScript), so the fleet runs
// what production runs, and starts in half the time tsx needs to compile it on each start.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { InstanceCommand } from './instance.ts';

const run = promisify(execFile);
const SAMPLE = fileURLToPath(new URL('../../', import.meta.url));
const REPO = path.resolve(SAMPLE, '..', '..');

/** Compiles the sample into examples/sample-api/dist (the packages' dist must be built: `npm run build`). */
export async function buildSample(): Promise<InstanceCommand> {
  const tsc = path.join(REPO, 'node_modules', 'typescript', 'bin', 'tsc');
  await run(process.execPath, [tsc, '-p', path.join(SAMPLE, 'tsconfig.build.json')], {
    cwd: SAMPLE,
    timeout: 120_000,
  });
  return { args: [path.join(SAMPLE, 'dist', 'main.js')], cwd: SAMPLE };
}
