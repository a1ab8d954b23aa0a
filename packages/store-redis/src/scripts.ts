// The Lua scripts of the Redis stores, one per atomic operation.
import { createHash } from 'node:crypto';

/** A Lua script and its SHA1, for EVALSHA with an EVAL fallback. */
export interface LuaScript {
  readonly name: string;
  readonly lua: string;
  readonly sha: string;
}

/** Declares a script; its SHA1 is computed once. */
export function lua(name: string, source: string): LuaScript {
  return { name, lua: source, sha: createHash('sha1').update(source).digest('hex') };
}

// Every script touches exactly one key, KEYS[1] (so none can cross Cluster hash slots; a test in
// test/cluster.test.ts checks it), and reads the time from the server
// (`TIME`), so instances with skewed clocks still agree on windows and expiries. Redis >= 5
// replicates script effects, which makes TIME in a writing script safe.
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

// Idempotency record: hash { s = 'p' (pending) | 'c' (completed), t = token, f = fingerprint, r = response JSON }.
export const IDEM_RESERVE = lua(
  'idempotency.reserve',
  `local rec = redis.call('HMGET', KEYS[1], 's', 'f', 'r')
if not rec[1] then
  redis.call('HSET', KEYS[1], 's', 'p', 't', ARGV[1], 'f', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'reserved'}
end
if ARGV[3] ~= '' and rec[2] and rec[2] ~= '' and rec[2] ~= ARGV[3] then return {'mismatch'} end
if rec[1] == 'c' then return {'completed', rec[3]} end
return {'pending', redis.call('PTTL', KEYS[1])}`,
);

export const IDEM_COMPLETE = lua(
  'idempotency.complete',
  `local rec = redis.call('HMGET', KEYS[1], 's', 't')
if rec[1] ~= 'p' or rec[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 's', 'c', 'r', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`,
);

export const IDEM_RELEASE = lua(
  'idempotency.release',
  `local rec = redis.call('HMGET', KEYS[1], 's', 't')
if rec[1] ~= 'p' or rec[2] ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`,
);

// Fixed window: a counter whose PX is the window end. Returns {allowed, remaining, resetAt, retryAfterMs}.
export const RATE_FIXED = lua(
  'rateLimit.fixed',
  `local limit, window, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
${NOW}
local ttl = redis.call('PTTL', KEYS[1])
local count = 0
if ttl > 0 then count = tonumber(redis.call('GET', KEYS[1])) or 0 end
if count + cost > limit then return {0, math.max(0, limit - count), now + ttl, ttl} end
if cost == 0 then
  if ttl > 0 then return {1, limit - count, now + ttl, 0} end
  return {1, limit, now, 0}
end
if ttl > 0 then
  redis.call('INCRBY', KEYS[1], cost)
else
  redis.call('SET', KEYS[1], cost, 'PX', ARGV[2])
  ttl = window
end
return {1, limit - count - cost, now + ttl, 0}`,
);

// Sliding log: a sorted set of units scored by the time they were counted; a unit leaves the
// window windowMs later. Members are unique per call (ARGV[4] is a fresh nonce).
export const RATE_SLIDING = lua(
  'rateLimit.sliding',
  `local limit, window, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
local allowed = 0
if count + cost <= limit then
  allowed = 1
  if cost > 0 then
    for i = 1, cost do redis.call('ZADD', KEYS[1], now, ARGV[4] .. ':' .. i) end
    count = count + cost
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
end
local resetAt, retry = now, 0
if count > 0 then
  resetAt = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]) + window
end
if allowed == 0 then
  local idx = count + cost - limit - 1
  retry = tonumber(redis.call('ZRANGE', KEYS[1], idx, idx, 'WITHSCORES')[2]) + window - now
end
return {allowed, math.max(0, limit - count), resetAt, retry}`,
);

// Saga: hash { v = version, d = data JSON, u = updatedAt }. Conflicts return {0, actual?}.
export const SAGA_CREATE = lua(
  'saga.create',
  `local v = redis.call('HGET', KEYS[1], 'v')
if v then return {0, tonumber(v)} end
${NOW}
redis.call('HSET', KEYS[1], 'v', 1, 'd', ARGV[1], 'u', string.format('%.0f', now))
if ARGV[2] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {1, 1, now}`,
);

export const SAGA_UPDATE = lua(
  'saga.update',
  `local v = redis.call('HGET', KEYS[1], 'v')
if not v then return {0} end
if tonumber(v) ~= tonumber(ARGV[1]) then return {0, tonumber(v)} end
${NOW}
local next = tonumber(v) + 1
redis.call('HSET', KEYS[1], 'v', next, 'd', ARGV[2], 'u', string.format('%.0f', now))
if ARGV[3] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return {1, next, now}`,
);

export const SAGA_DELETE = lua(
  'saga.delete',
  `local v = redis.call('HGET', KEYS[1], 'v')
if not v then return {0} end
if ARGV[1] ~= '' and tonumber(v) ~= tonumber(ARGV[1]) then return {2, tonumber(v)} end
redis.call('DEL', KEYS[1])
return {1}`,
);

// Cron lock: a string holding the owner, with PX as the lease. SET NX PX takes a free lock; the
// owner check and the change are one script so a lapsed owner can never touch a new owner's lock.
export const CRON_ACQUIRE = lua(
  'cron.acquire',
  `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0`,
);

export const CRON_RENEW = lua(
  'cron.renew',
  `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`,
);

export const CRON_RELEASE = lua(
  'cron.release',
  `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`,
);

export const CRON_GET = lua(
  'cron.get',
  `local owner = redis.call('GET', KEYS[1])
if not owner then return {} end
local ttl = redis.call('PTTL', KEYS[1])
${NOW}
return {owner, now + ttl}`,
);
