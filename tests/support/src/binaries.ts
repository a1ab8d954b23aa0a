// Where the real servers' binaries are, and what a suite does when one is missing: on a
// developer's machine it skips with a reason that says what to install; in CI (CI=true) nothing
// skips, so a runner without the server fails instead of passing on fewer tests.
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { describe, it, type SuiteContext } from 'node:test';

/** True in CI, where a missing server fails its suite instead of skipping it. */
export const inCi = process.env.CI === 'true';

/**
 * True when `file` exists and this process may run it.
 *
 * @example
 * ```ts
 * if (executable('/usr/lib/postgresql/15/bin/initdb')) use('/usr/lib/postgresql/15/bin');
 * ```
 */
export function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The first runnable `name` on PATH or in `extraDirs` (Debian puts some servers in /usr/sbin,
 * which a non-root PATH lacks), or undefined.
 *
 * @example
 * ```ts
 * const bin = onPath('redis-server', ['/usr/bin', '/usr/local/bin', '/usr/sbin']);
 * ```
 */
export function onPath(name: string, extraDirs: readonly string[] = []): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).concat(extraDirs)) {
    if (dir && executable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

/**
 * The `skip` option of a suite that needs `bin`: `reason` outside CI when it is missing, `false`
 * otherwise (in CI the suite runs and its server's start throws).
 *
 * @example
 * ```ts
 * export const skipRedis = skipWithout(redisServerBin, 'redis-server not installed');
 * describe('Redis', { skip: skipRedis }, () => { ... });
 * ```
 */
export function skipWithout(bin: string | undefined, reason: string): string | false {
  return !bin && !inCi ? reason : false;
}

/**
 * `describe` for a suite that needs a server: with a skip reason it registers one test that
 * reports itself skipped with it (so the summary counts the suite under "skipped" instead of
 * showing nothing), else the suite.
 *
 * @example
 * ```ts
 * export const describeRedis = (name: string, fn: () => void) => describeWithServer(skipRedis, name, fn);
 * ```
 */
export function describeWithServer(
  skip: string | false,
  name: string,
  fn: (s: SuiteContext) => void | Promise<void>,
): void {
  if (skip) it(name, (t) => t.skip(skip));
  else describe(name, fn);
}

/**
 * Throws what a server's start says when its binary is missing: in CI, that the suite fails on
 * purpose and what to install; elsewhere (where the suite would have been skipped) the plain fact.
 *
 * @example
 * ```ts
 * if (!redisServerBin) throwMissing('redis-server not installed', 'Redis', 'apt-get install redis-server');
 * ```
 */
export function throwMissing(missing: string, suites: string, install: string): never {
  throw new Error(
    inCi
      ? `${missing}: with CI=true the ${suites} tests fail instead of skipping (install with ${install}).`
      : missing,
  );
}
