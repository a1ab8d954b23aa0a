// `outbox` of addKitAutoCrud: checked at the boundary, defaults applied.
import { KitError } from '@kit/core';
import type { DispatcherSettings } from './dispatcher.js';
import type { OutboxTarget } from './types.js';

/**
 * The transactional outbox (`outbox` of `addKitAutoCrud`): every committed write of every entity
 * the app serves is also a record in `kit_outbox`, written in the write's transaction, and one
 * instance at a time delivers the records to the subscribers (`kitAutoCrud.onChange`) and
 * `targets`, deleting each once every target has it (a record out of attempts moves to
 * `kit_outbox_dead`). Numbers are milliseconds unless named otherwise.
 *
 * @example
 * ```ts
 * import { redisStreamTarget } from '@kit/store-redis';
 * const store = addKitStore(app, process.env.REDIS_URL!);
 * addKitAutoCrud(app, url, { outbox: { targets: [redisStreamTarget(store, { stream: 'changes' })], maxAttempts: 8 } satisfies OutboxOptions });
 * ```
 */
export interface OutboxOptions {
  /** Targets every record goes to besides the in-process subscribers (a Redis Stream, a webhook). */
  targets?: readonly OutboxTarget[];
  /** Attempts per record before it is dead (default 10). */
  maxAttempts?: number;
  /** The first retry's delay; each next one doubles it, with ±20% jitter (default 500). */
  retryBaseMs?: number;
  /** The longest delay between two attempts (default 60,000). */
  retryMaxMs?: number;
  /** The dispatcher's lease: a dead leader's successor takes over at most this long after its last renewal (default 5000). */
  leaseMs?: number;
  /** How often an idle dispatcher looks for records, and a follower for a free lease (default 250). */
  pollMs?: number;
  /** Records read per batch (default 200). */
  batchSize?: number;
  /** How long one delivery to one target may take before it counts as failed (default 10,000). */
  deliveryTimeoutMs?: number;
  /** False: this instance writes records but never dispatches (another process does). Default true. */
  dispatch?: boolean;
}

/** The outbox, resolved. */
export interface ResolvedOutbox extends DispatcherSettings {
  readonly targets: readonly OutboxTarget[];
  readonly dispatch: boolean;
}

function invalid(option: string, value: unknown, expected: string): KitError {
  const shown =
    typeof value === 'object'
      ? (JSON.stringify(value) ?? String(value)).slice(0, 120)
      : typeof value === 'string'
        ? JSON.stringify(value)
        : String(value);
  return new KitError(
    'KIT_ERR_INVALID_OPTION',
    `Invalid Kit option addKitAutoCrud options.outbox${option} = ${shown}: expected ${expected}.`,
  );
}

function ms(options: OutboxOptions, name: keyof OutboxOptions, fallback: number): number {
  const v = options[name] ?? fallback;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1)
    throw invalid(`.${name}`, v, 'a positive integer');
  return v;
}

/** `outbox`: undefined when off. Throws `KIT_ERR_INVALID_OPTION` naming the option and value. */
export function resolveOutbox(value: unknown): ResolvedOutbox | undefined {
  if (value === undefined || value === false) return undefined;
  if (value !== true && (typeof value !== 'object' || value === null || Array.isArray(value)))
    throw invalid('', value, 'true, false or { targets?, maxAttempts?, ... }');
  const options: OutboxOptions = value === true ? {} : (value as OutboxOptions);
  const targets = options.targets ?? [];
  if (!Array.isArray(targets))
    throw invalid('.targets', targets, 'an array of { name, deliver(message, signal) }');
  const names = new Set<string>();
  for (const [i, target] of (targets as unknown[]).entries()) {
    const t = target as Partial<OutboxTarget> | null;
    if (
      typeof t !== 'object' ||
      t === null ||
      typeof t.name !== 'string' ||
      t.name === '' ||
      t.name.includes('\n') ||
      typeof t.deliver !== 'function'
    ) {
      throw invalid(
        `.targets[${i}]`,
        typeof t === 'object' && t !== null ? { name: t.name } : t,
        '{ name: a non-empty one-line string, deliver(message, signal) }',
      );
    }
    if (names.has(t.name))
      throw invalid(`.targets[${i}].name`, t.name, 'a name no other target has');
    names.add(t.name);
  }
  if (options.dispatch !== undefined && typeof options.dispatch !== 'boolean')
    throw invalid('.dispatch', options.dispatch, 'true or false');
  const leaseMs = ms(options, 'leaseMs', 5000);
  return {
    targets,
    dispatch: options.dispatch ?? true,
    maxAttempts: ms(options, 'maxAttempts', 10),
    retryBaseMs: ms(options, 'retryBaseMs', 500),
    retryMaxMs: ms(options, 'retryMaxMs', 60_000),
    leaseMs,
    pollMs: ms(options, 'pollMs', 250),
    batchSize: ms(options, 'batchSize', 200),
    deliveryTimeoutMs: ms(options, 'deliveryTimeoutMs', 10_000),
  };
}
