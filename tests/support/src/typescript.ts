// A program compiled by the repository's TypeScript with its strict settings (tsconfig.base.json)
// against the built packages, for the tests whose subject is what a host's code compiles to or
// is refused with. The program lives in a fresh folder under the repository's .tmp/, so it
// resolves @kit/* through the workspace as a host's code would, and the folder goes afterwards.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repo = path.resolve(import.meta.dirname, '..', '..', '..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc', { paths: [repo] });

/** What the compiler said: `ok` when it accepted the program, and its output otherwise. */
export interface Compiled {
  readonly ok: boolean;
  readonly output: string;
}

/**
 * Type-checks `source` as the one file `file` of a strict program (no emit); resolves with the
 * compiler's verdict and output, never rejects for a type error.
 *
 * @example
 * ```ts
 * const { ok, output } = await compileStrict(`import { KitError } from '@kit/core';\n…`);
 * assert.match(output, /TS2367.*KIT_ERR_DEPENDENCIES/);
 * ```
 */
export async function compileStrict(source: string, file = 'main.ts'): Promise<Compiled> {
  await mkdir(path.join(repo, '.tmp'), { recursive: true });
  const dir = await mkdtemp(path.join(repo, '.tmp', 'compile-'));
  try {
    await writeFile(path.join(dir, file), source);
    await writeFile(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        extends: path.join(repo, 'tsconfig.base.json'),
        compilerOptions: {
          noEmit: true,
          declaration: false,
          declarationMap: false,
          sourceMap: false,
        },
        files: [file],
      }),
    );
    await run(process.execPath, [tsc, '-p', dir], { cwd: dir });
    return { ok: true, output: '' };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
