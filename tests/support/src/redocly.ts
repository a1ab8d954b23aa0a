// Runs the real `redocly lint` (recommended rules) on an OpenAPI document.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Lints `document` with redocly's recommended rules; `ok` is false when any rule reports an error. */
export async function redoclyLint(document: unknown): Promise<{ ok: boolean; output: string }> {
  await mkdir(path.join(repo, '.tmp'), { recursive: true });
  const dir = await mkdtemp(path.join(repo, '.tmp', 'redocly-'));
  const file = path.join(dir, 'openapi.json');
  await writeFile(file, JSON.stringify(document, null, 2));
  const require = createRequire(import.meta.url);
  const pkgPath = require.resolve('@redocly/cli/package.json');
  const pkg = JSON.parse(await readFile(pkgPath, 'utf8')) as { bin: Record<string, string> };
  const cli = path.join(path.dirname(pkgPath), pkg.bin.redocly ?? Object.values(pkg.bin)[0] ?? '');
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [cli, 'lint', file, '--extends=recommended', '--format=summary'],
      { env },
    );
    const output = stdout + stderr;
    return { ok: !/^error\s/m.test(output) && /valid/i.test(output), output };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
