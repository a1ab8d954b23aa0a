// Tests CI runs once, on one Node line (.ci/run sets KIT_HEAVY_TESTS=skip for the other lines);
// `npm test` on a developer's machine runs them unless KIT_HEAVY_TESTS=skip is set. Two kinds:
// - heavy: fault injection under load (a database stopped, crashed or locked while requests
//   run), several processes on one store, a rolling deploy behind a load balancer. Each takes
//   tens of seconds and needs the machine's cores to itself.
// - line-independent: what the TypeScript compiler alone decides (a program that must or must
//   not compile). tsc gives the same answer on every Node line, and each such suite takes 15 to
//   35 s of a core per line.
import { it } from 'node:test';

const once = process.env.KIT_HEAVY_TESTS === 'skip';
const heavyReason = 'heavy fault/fleet tests run once per CI run, on the Node line .ci/run names (KIT_HEAVY_TESTS=skip here)';

/** The skip reason for heavy tests in this run, or `false` when they run. */
export const skipHeavy: string | false = once ? heavyReason : false;

/** Registers `fn`, or, when the once-per-CI tests are skipped, one test that reports itself skipped with `reason` (so the summary counts it). */
function onceOnCi(reason: string): (name: string, fn: () => void) => void {
  return (name, fn) => {
    if (once) it(name, (t) => t.skip(reason));
    else fn();
  };
}

/**
 * Registers `fn` as a heavy suite, skipped where heavy tests are.
 *
 * @example
 * ```ts
 * heavy('PostgreSQL chaos under load', () => { describe(...); });
 * ```
 */
export const heavy = onceOnCi(heavyReason);

/**
 * Registers `fn` as a suite whose outcome the TypeScript compiler alone decides, skipped where
 * heavy tests are.
 *
 * @example
 * ```ts
 * lineIndependent('KitErrorCode (TypeScript compiler)', () => { it(...); });
 * ```
 */
export const lineIndependent = onceOnCi(
  'the TypeScript compiler decides this suite the same on every Node line: it runs once per CI run, on the line .ci/run names (KIT_HEAVY_TESTS=skip here)',
);
