import { coreErrors } from './error-codes.js';
import { KitError } from './kit-error.js';
import { redactForFull } from './secrets.js';

export {
  KitError,
  errorCatalogue,
  type KitErrorCatalogue,
  type KitErrorCode,
  type KitErrorCodes,
  type KitErrorSpec,
} from './kit-error.js';
export { coreErrors } from './error-codes.js';

/** True for a class (as opposed to a function that can be called without `new`). */
export function isClass(value: unknown): boolean {
  return typeof value === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(value));
}

/** Formats a configuration value for an error message without flooding it. */
export function show(value: unknown): string {
  let text: string;
  if (value instanceof RegExp) text = String(value);
  else if (typeof value === 'function')
    text = `[${isClass(value) ? 'class' : 'function'} ${value.name || 'anonymous'}]`;
  else if (typeof value === 'string') text = JSON.stringify(value);
  else if (typeof value === 'number' || typeof value === 'bigint') text = String(value);
  else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/** `KIT_ERR_INVALID_OPTION`: a configuration value is out of range or of the wrong type. */
export function invalidOption(option: string, value: unknown, expected: string): KitError {
  return new KitError(
    'KIT_ERR_INVALID_OPTION',
    `Invalid Kit option ${option} = ${show(value)}: expected ${expected}.`,
  );
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/** A one-line, scrubbed account of what a host callback threw, for a KitError message. */
function describeThrown(err: unknown): string {
  if (err instanceof Error)
    return redactForFull(`${err.name}: ${err.message}`.split('\n')[0] ?? err.name).slice(0, 300);
  return `a ${err === null ? 'null' : typeof err} (${redactForFull(show(err))})`;
}

/**
 * Runs a host's configure callback (`addKit`'s, `configureAuditTrail`'s, `healthChecksConfigure`,
 * `auditSinkFactory`...) and returns its result. A KitError it throws passes through; anything else
 * becomes `KIT_ERR_CONFIGURE_FAILED` naming the option, with the original as `cause`. A promise
 * returned is `KIT_ERR_INVALID_OPTION`: configure callbacks run synchronously, and a promise
 * would be ignored, its work half done when the server starts. `translate` may turn a thrown
 * error into a more precise KitError first.
 *
 * @example
 * ```ts
 * callConfigure('healthChecksConfigure', options.healthChecksConfigure, builder);
 * ```
 */
export function callConfigure<A>(
  option: string,
  fn: (arg: A) => unknown,
  arg: A,
  translate?: (err: unknown) => unknown,
): unknown {
  let result: unknown;
  try {
    result = fn(arg);
  } catch (thrown) {
    // translate lets the caller turn a known failure into its own, more precise KitError.
    const err = translate ? translate(thrown) : thrown;
    if (err instanceof KitError) throw err;
    throw coreErrors.error(
      'KIT_ERR_CONFIGURE_FAILED',
      { option, callback: show(fn), thrown: describeThrown(err) },
      { cause: err },
    );
  }
  if (isThenable(result)) {
    // The promise is not awaited; keep its rejection from becoming an unhandled one.
    Promise.resolve(result).catch(() => undefined);
    throw invalidOption(
      option,
      fn,
      'a synchronous function: it returned a promise, which Kit would not wait for. Do asynchronous set-up before addKit, or in opt.configureWarmup(task), which useKit awaits',
    );
  }
  return result;
}

// Levenshtein distance, case-insensitive: option names are compared as a user types them.
function distance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  let previous = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i += 1) {
    const row = [i];
    for (let j = 1; j <= y.length; j += 1) {
      row[j] = Math.min(
        (previous[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (previous[j - 1] as number) + (x[i - 1] === y[j - 1] ? 0 : 1),
      );
    }
    previous = row;
  }
  return previous[y.length] as number;
}

/** The known name closest to `name`, if one is close enough to be a likely typo. */
function closestName(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = distance(name, k);
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return bestDistance <= Math.max(2, Math.floor(name.length / 3)) ? best : undefined;
}

/**
 * Refuses properties an options object does not define (a misspelled `opt.apiPrefx` would
 * otherwise be ignored): `KIT_ERR_UNKNOWN_OPTION` naming it, its value and the closest known
 * name. `template` is a fresh instance of the options class; `prefix` names the nesting
 * (`'gracefulShutdown.'`).
 */
export function assertKnownOptions(options: object, template: object, prefix = ''): void {
  const fields = Object.keys(template);
  const methods = Object.getOwnPropertyNames(Object.getPrototypeOf(template) as object).filter(
    (n) => n !== 'constructor',
  );
  for (const [key, value] of Object.entries(options)) {
    if (fields.includes(key)) continue;
    if (methods.includes(key)) {
      throw invalidOption(
        `${prefix}${key}`,
        value,
        `no assignment: ${key} is a method, call it as opt.${key}(...)`,
      );
    }
    const closest = closestName(key, [...fields, ...methods]);
    throw coreErrors.error('KIT_ERR_UNKNOWN_OPTION', {
      option: `${prefix}${key}`,
      value: show(value),
      hint:
        closest === undefined
          ? `the known options are ${fields.map((f) => prefix + f).join(', ')}.`
          : `did you mean ${prefix}${closest}?`,
    });
  }
}
