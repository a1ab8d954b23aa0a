// An outbox target on a Redis Stream (`redisStreamTarget`): each record of AutoCrud's outbox is
// one stream entry, added at most once per idempotency id. The entry and a marker key for the id
// are written by one script, so a redelivery of the same record (a retry after a lost reply, or
// the next leader after a crash) adds nothing. Typed by shape, so @kit/store-redis does not
// depend on @kit/autocrud.
import { KitError } from '@kit/core';
import { connectionOf, type KitRedisStore } from './plugin.js';
import { lua } from './scripts.js';

/**
 * What the target needs of an outbox message: its idempotency id, entity and operation (the rest
 * goes into `message` as JSON). AutoCrud's `ChangeMessage` is one.
 *
 * @example
 * ```ts
 * await target.deliver({ id: randomUUID(), entity: 'Product', operation: 'patch', key: 7 } satisfies StreamMessage & { key: number });
 * ```
 */
export interface StreamMessage {
  readonly id: string;
  readonly entity: string;
  readonly operation: string;
}

/**
 * Options of {@link redisStreamTarget}.
 *
 * @example
 * ```ts
 * const options: RedisStreamTargetOptions = { stream: 'catalog-changes', maxLen: 1_000_000, dedupeTtlMs: 7 * 86_400_000 };
 * ```
 */
export interface RedisStreamTargetOptions {
  /** The stream's name under the store's key prefix (default `changes`): the key is `{prefix}{<stream>}`. */
  readonly stream?: string;
  /** Trims the stream to about this many entries (`MAXLEN ~`); default: no trimming. */
  readonly maxLen?: number;
  /** How long an id is remembered to refuse a repeat (default 86,400,000: a day). */
  readonly dedupeTtlMs?: number;
  /** The target's name in the outbox (default `redis-stream:<stream>`). */
  readonly name?: string;
}

/**
 * An outbox target, as AutoCrud's `outbox.targets` takes it.
 *
 * @example
 * ```ts
 * const target: RedisStreamTarget = redisStreamTarget(store);
 * ```
 */
export interface RedisStreamTarget {
  readonly name: string;
  /** The stream's key. */
  readonly key: string;
  deliver(message: StreamMessage, signal?: AbortSignal): Promise<void>;
}

// KEYS[1] the stream, KEYS[2] the id's marker (one Cluster slot: both carry the stream's hash tag).
// ARGV: ttl, maxLen ('' for none), then the entry's field/value pairs. Returns the entry's id, or
// false when the marker was there (a repeat).
const STREAM_ADD = lua(
  'outbox.streamAdd',
  `if not redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[1]) then return false end
local args = {'XADD', KEYS[1]}
if ARGV[2] ~= '' then
  table.insert(args, 'MAXLEN')
  table.insert(args, '~')
  table.insert(args, ARGV[2])
end
table.insert(args, '*')
for i = 3, #ARGV do table.insert(args, ARGV[i]) end
return redis.call(unpack(args))`,
);

function positive(
  option: string,
  value: number | undefined,
  fallback: number | undefined,
): number | undefined {
  const v = value ?? fallback;
  if (v !== undefined && (!Number.isSafeInteger(v) || v < 1))
    throw new KitError(
      'KIT_ERR_INVALID_OPTION',
      `Invalid Kit option redisStreamTarget options.${option} = ${String(v)}: expected a positive integer.`,
    );
  return v;
}

/**
 * A target of AutoCrud's outbox that adds each change to a Redis Stream of `store` (`XADD`),
 * fields `id` (the idempotency id), `entity`, `operation` and `message` (the whole message as
 * JSON). A record delivered again within `dedupeTtlMs` is not added again, so readers of the
 * stream (`XREADGROUP`) see each change once. Fails (and the outbox retries) while Redis is down.
 *
 * @throws {KitError} `KIT_ERR_INVALID_OPTION` for a bad option.
 * @example
 * ```ts
 * const store = addKitStore(app, process.env.REDIS_URL!);
 * addKitAutoCrud(app, url, { outbox: { targets: [redisStreamTarget(store, { stream: 'catalog-changes' })] } });
 * // elsewhere: XREADGROUP GROUP search c1 STREAMS 'kit:{catalog-changes}' >
 * ```
 */
export function redisStreamTarget(
  store: KitRedisStore,
  options: RedisStreamTargetOptions = {},
): RedisStreamTarget {
  const stream = options.stream ?? 'changes';
  if (typeof stream !== 'string' || stream === '' || /[{}\s]/.test(stream) || stream.length > 200) {
    throw new KitError(
      'KIT_ERR_INVALID_OPTION',
      `Invalid Kit option redisStreamTarget options.stream = ${JSON.stringify(stream)}: expected a name of 1 to 200 characters without braces or spaces.`,
    );
  }
  const maxLen = positive('maxLen', options.maxLen, undefined);
  const ttl = positive('dedupeTtlMs', options.dedupeTtlMs, 86_400_000) as number;
  const connection = connectionOf(store);
  const key = `${store.keyPrefix}{${stream}}`;
  return {
    name: options.name ?? `redis-stream:${stream}`,
    key,
    async deliver(message) {
      const fields = [
        'id',
        message.id,
        'entity',
        message.entity,
        'operation',
        message.operation,
        'message',
        JSON.stringify(message),
      ];
      await connection.run(
        STREAM_ADD,
        [key, `${key}:seen:${message.id}`],
        [ttl, maxLen ?? '', ...fields],
      );
    },
  };
}
