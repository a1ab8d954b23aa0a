// The TypeScript sources below a folder, for the tests that read a package's code as text or
// through the compiler (its floors, its engine branches): one walk, so that every such check
// sees the same files.
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * Every `.ts` and `.mts` file below `dir` (declaration files left out), in directory order.
 *
 * @example
 * ```ts
 * const files = sourceFiles(path.join(root, 'packages', 'core', 'src'));
 * ```
 */
export function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (folder: string): void => {
    for (const name of readdirSync(folder)) {
      const full = path.join(folder, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (/\.m?ts$/.test(name) && !name.endsWith('.d.ts')) out.push(full);
    }
  };
  walk(dir);
  return out;
}
