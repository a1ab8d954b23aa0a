import { coreErrors, show, type KitError } from '../shared/errors.js';
import type { JsonValue, RateLimitAlgorithm, RateLimitOptions } from './types.js';

const MAX_KEY_LENGTH = 1024;

function invalid(what: string, value: unknown, expected: string): KitError {
  return coreErrors.error('KIT_ERR_STORE_INVALID_ARGUMENT', { what, value: show(value), expected });
}

function integer(what: string, value: unknown, min: number, expected: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min)
    throw invalid(what, value, expected);
  return value;
}

/** The largest limit the sliding-window algorithm accepts. */
const SLIDING_WINDOW_MAX_LIMIT = 10_000;
/**
 * {@link RateLimitOptions} with every default applied, as `storeArguments.rateLimit` returns them.
 *
 * @example
 * ```ts
 * const resolved: ResolvedRateLimitOptions = storeArguments.rateLimit({ limit: 5, windowMs: 1000 });
 * // { limit: 5, windowMs: 1000, algorithm: 'fixed-window', cost: 1 }
 * ```
 */
export interface ResolvedRateLimitOptions {
  readonly limit: number;
  readonly windowMs: number;
  readonly algorithm: RateLimitAlgorithm;
  readonly cost: number;
}

/**
 * Argument checks shared by every store implementation, so that memory and Redis reject the same
 * calls with the same `KIT_ERR_STORE_INVALID_ARGUMENT` error. For authors of store
 * implementations; applications do not need them.
 *
 * @example
 * ```ts
 * class MyRateLimitStore implements IRateLimitStore {
 *   async consume(key: string, options: RateLimitOptions) {
 *     storeArguments.key('key', key);
 *     const { limit, windowMs, algorithm, cost } = storeArguments.rateLimit(options);
 *     // ...
 *   }
 * }
 * ```
 */
export const storeArguments = {
  /** A key, id, job or owner: a non-empty string of at most 1024 characters. */
  key(what: string, value: unknown): string {
    if (typeof value !== 'string' || value.length === 0 || value.length > MAX_KEY_LENGTH) {
      throw invalid(what, value, `a non-empty string of at most ${MAX_KEY_LENGTH} characters`);
    }
    return value;
  },
  /** A duration: a positive integer number of milliseconds. */
  ms(what: string, value: unknown): number {
    return integer(what, value, 1, 'a positive integer number of milliseconds');
  },
  /** A saga version: an integer >= 1. */
  version(what: string, value: unknown): number {
    return integer(what, value, 1, 'an integer version >= 1');
  },
  /** Serialises a stored value; refuses what JSON cannot carry (undefined, functions, BigInt, cycles). */
  json(what: string, value: JsonValue): string {
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch (err) {
      throw invalid(what, value, `a JSON-serialisable value (${(err as Error).message})`);
    }
    if (text === undefined) throw invalid(what, value, 'a JSON-serialisable value');
    return text;
  },
  /** Validates rate-limit options and applies the defaults. */
  rateLimit(options: RateLimitOptions): ResolvedRateLimitOptions {
    if (typeof options !== 'object' || options === null)
      throw invalid('options', options, '{ limit, windowMs, algorithm?, cost? }');
    const limit = integer('options.limit', options.limit, 1, 'a positive integer');
    const windowMs = integer(
      'options.windowMs',
      options.windowMs,
      1,
      'a positive integer number of milliseconds',
    );
    const algorithm = options.algorithm ?? 'fixed-window';
    if (algorithm !== 'fixed-window' && algorithm !== 'sliding-window') {
      throw invalid('options.algorithm', algorithm, '"fixed-window" or "sliding-window"');
    }
    const cost = integer('options.cost', options.cost ?? 1, 0, 'an integer >= 0');
    if (cost > limit) throw invalid('options.cost', cost, `at most options.limit (${limit})`);
    // The sliding window keeps one timestamp per unit, in memory and in Redis.
    if (algorithm === 'sliding-window' && limit > SLIDING_WINDOW_MAX_LIMIT) {
      throw invalid(
        'options.limit',
        limit,
        `at most ${SLIDING_WINDOW_MAX_LIMIT} with the sliding-window algorithm (it keeps a timestamp per unit); use fixed-window above that`,
      );
    }
    return { limit, windowMs, algorithm, cost };
  },
} as const;
