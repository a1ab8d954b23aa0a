import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Name and version from the host application's package.json. */
interface HostPackage {
  readonly name: string | undefined;
  readonly version: string | undefined;
}

let cached: HostPackage | undefined;

/**
 * Reads the nearest package.json above the entry module (or the working directory), skipping
 * anything inside node_modules, so the host's own version is reported, not a dependency's.
 */
export function hostPackage(): HostPackage {
  if (cached) return cached;
  const entry = process.argv[1];
  let dir = entry ? path.dirname(path.resolve(entry)) : process.cwd();
  cached = { name: undefined, version: undefined };
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (!dir.split(path.sep).includes('node_modules') && existsSync(file)) {
      try {
        const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
        cached = {
          name: typeof pkg.name === 'string' ? pkg.name : undefined,
          version: typeof pkg.version === 'string' ? pkg.version : undefined,
        };
      } catch {
        // an unreadable package.json leaves the version unknown rather than failing start-up
      }
      break;
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return cached;
}
