// Tests CI runs once, on one Node line (.ci/run sets KIT_HEAVY_TESTS=skip for the other lines);
// `npm test` on a developer's machine runs them unless KIT_HEAVY_TESTS=skip is set. Two kinds:
// - heavy: fault injection under load (a database stopped, crashed or locked while requests
//   run), several processes on one store, a rolling deploy behind a load balancer. Each takes
//   tens of seconds and needs the machine's cores to itself.
// - line-independent: what the TypeScript compiler alone decides (a program that must or must
//   not compile, the packages' public surface) and checks of static files (the Kubernetes
//   manifests against the API's schemas). They give the same answer on every Node line, and each
//   takes 5 to 35 s of a core per line. Inside a test that also does runtime work (a generated
//   client compiled, then called), only the compiler's step is left to that line: typeCheckOnce.
import { it, type TestContext } from 'node:test';

const once = process.env.KIT_HEAVY_TESTS === 'skip';
const heavyReason =
  'heavy fault/fleet tests run once per CI run, on the Node line .ci/run names (KIT_HEAVY_TESTS=skip here)';

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
const lineIndependentReason =
  'decided the same on every Node line (the TypeScript compiler, static files): it runs once per CI run, on the line .ci/run names (KIT_HEAVY_TESTS=skip here)';

export const lineIndependent = onceOnCi(lineIndependentReason);

/**
 * Runs `check`, a step of a test that the TypeScript compiler alone decides (strict tsc on a
 * generated client the test then calls), where line-independent tests run; elsewhere the test
 * goes on without it and says so in a diagnostic.
 *
 * @example
 * ```ts
 * await typeCheckOnce(t, 'the generated client under strict tsc', () => run(process.execPath, [tsc, '-p', dir]));
 * ```
 */
export async function typeCheckOnce(
  t: TestContext,
  what: string,
  check: () => Promise<unknown>,
): Promise<void> {
  if (once) t.diagnostic(`not checked here: ${what}; ${lineIndependentReason}`);
  else await check();
}

/**
 * Whether the TypeScript compiler's own answers are checked in this run (everywhere but the lines
 * that skip the once-per-CI tests): a test that needs a compiler's output elsewhere may emit it
 * without the type check (`tsc --noCheck`), and says so.
 *
 * @example
 * ```ts
 * const args = ['-p', dir, ...(compilerChecksHere ? [] : ['--noCheck'])];
 * ```
 */
export const compilerChecksHere: boolean = !once;
