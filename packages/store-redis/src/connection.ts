import { createHash } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import { KitError, StoreUnavailableError } from '@kit/core';
import { scrub, type StoreUrl } from './url.js';

/**
 * The logger a store connection writes to: pino's (Fastify's `app.log`) fits. Every message and
 * field Kit passes is already redacted.
 *
 * @example
 * ```ts
 * const logger: StoreLogger = pino({ level: 'info' }).child({ component: 'worker-stores' });
 * const stores = createRedisStores(process.env.REDIS_URL!, { logger });
 * ```
 */
export interface StoreLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

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

/** Connection settings `createRedisStores` resolved from its options. */
export interface ConnectionSettings {
  readonly commandTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly reconnectMaxDelayMs: number;
  readonly connectionName: string;
  readonly redisOptions: RedisOptions;
}

// Replies with which the server says "not now" rather than "wrong command": the store is unavailable.
const UNAVAILABLE_REPLIES = /^(LOADING|BUSY|READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|NOAUTH|WRONGPASS|NOREPLICAS)\b/;

/**
 * One ioredis client set up to fail fast: no offline queue, no retry or automatic resend of
 * commands whose connection dropped, a per-command timeout. A store call while Redis is down is
 * rejected at once with `KIT_ERR_STORE_UNAVAILABLE` instead of waiting in a queue that could grow
 * without bound, and a write is never silently sent twice. The client keeps reconnecting in the
 * background with a capped backoff, so calls succeed again as soon as Redis is back.
 */
/**
 * Names a connection failure without its address or any credential, so it can go into errors and
 * the health report (`connect ECONNREFUSED 10.0.0.5:6379` becomes `connection refused`).
 */
function failureOf(err: Error & { code?: string }): string {
  const code = err.code ?? '';
  if (/^(WRONGPASS|NOAUTH)/.test(err.message)) return 'authentication failed';
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  if (code === 'ETIMEDOUT' || /timeout/i.test(err.message)) return 'connect timed out';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'connection reset';
  if (/^(LOADING|MASTERDOWN|BUSY)/.test(err.message)) return `server not ready (${err.message.split(' ')[0]})`;
  if (code.startsWith('ERR_TLS') || /certificate|SSL|TLS/i.test(err.message)) return 'TLS handshake failed';
  return 'connection error';
}

export class RedisConnection {
  readonly client: Redis;
  #closed = false;
  #down = false;
  /** The last connection failure, address-free, for errors raised while down. */
  #failure: string | undefined;

  constructor(
    readonly url: StoreUrl,
    readonly settings: ConnectionSettings,
    private readonly log: StoreLogger | undefined,
  ) {
    this.client = new Redis(url.href, {
      ...settings.redisOptions,
      connectionName: settings.connectionName,
      connectTimeout: settings.connectTimeoutMs,
      commandTimeout: settings.commandTimeoutMs,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      lazyConnect: false,
      // 50, 100, 200, ... ms, capped: a restarted Redis is picked up within the cap.
      retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times - 1, 16), settings.reconnectMaxDelayMs),
    });
    // Without an 'error' listener ioredis prints every reconnect failure to the console.
    this.client.on('error', (err: Error) => {
      if (this.#closed) return;
      this.#failure = failureOf(err);
      const fields = { redis: url.redacted, reason: scrub(err.message, url.secrets) };
      if (this.#down) {
        this.log?.debug(fields, 'Redis store still unreachable');
      } else {
        this.#down = true;
        this.log?.warn(fields, 'Redis store connection failed; store calls fail with KIT_ERR_STORE_UNAVAILABLE until it is back');
      }
    });
    this.client.on('close', () => {
      if (this.#closed) return;
      this.#failure ??= 'connection lost';
      if (this.#down) return;
      this.#down = true;
      this.log?.warn({ redis: url.redacted }, 'Redis store connection lost; reconnecting');
    });
    this.client.on('ready', () => {
      this.log?.info({ redis: url.redacted }, this.#down ? 'Redis store connection restored' : 'Redis store connected');
      this.#down = false;
      this.#failure = undefined;
    });
  }

  /** True while commands can be sent. */
  get ready(): boolean {
    return this.client.status === 'ready';
  }

  /**
   * Resolves when the connection is ready, its first attempt failed, or `timeoutMs` passed,
   * whichever comes first; never rejects. Start-up uses it so the first requests do not race the
   * connection, without making a Redis outage a start-up failure.
   */
  async settle(timeoutMs: number): Promise<boolean> {
    if (this.ready) return true;
    if (this.#closed) return false;
    return new Promise<boolean>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.client.off('ready', done);
        this.client.off('error', done);
        this.client.off('end', done);
        resolve(this.ready);
      };
      const timer = setTimeout(done, timeoutMs);
      this.client.once('ready', done);
      this.client.once('error', done);
      this.client.once('end', done);
    });
  }

  /** Runs one client call with the store's error mapping; refuses at once when not connected. */
  async call<T>(fn: (client: Redis) => Promise<T>): Promise<T> {
    if (!this.ready) {
      const why = this.#closed ? 'the store was closed' : `not connected: ${this.#failure ?? this.client.status}`;
      throw new StoreUnavailableError('redis', why);
    }
    try {
      return await fn(this.client);
    } catch (err) {
      throw this.#storeError(err);
    }
  }

  /** Runs a script by SHA, loading it with EVAL when the server does not know it (e.g. after a restart). */
  async run(script: LuaScript, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    return this.call(async (client) => {
      try {
        return await client.evalsha(script.sha, keys.length, ...keys, ...args);
      } catch (err) {
        if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
        return await client.eval(script.lua, keys.length, ...keys, ...args);
      }
    });
  }

  /** PING, abandoned when `signal` aborts; resolves with the round trip in milliseconds. */
  async ping(signal?: AbortSignal): Promise<number> {
    const started = performance.now();
    if (signal?.aborted) throw new StoreUnavailableError('redis', 'no PING reply before the check timed out');
    await this.call(
      (client) =>
        new Promise<unknown>((resolve, reject) => {
          const onAbort = () => reject(new StoreUnavailableError('redis', 'no PING reply before the check timed out'));
          signal?.addEventListener('abort', onAbort, { once: true });
          client.ping().then(resolve, reject).finally(() => signal?.removeEventListener('abort', onAbort));
        }),
    );
    return Math.round((performance.now() - started) * 100) / 100;
  }

  /** Closes the connection and stops reconnecting. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.ready) {
      // QUIT lets in-flight replies arrive; a hung server must not hold up shutdown.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.client.quit().catch(() => undefined),
        new Promise((resolve) => {
          timer = setTimeout(resolve, Math.min(this.settings.commandTimeoutMs, 1000));
        }),
      ]);
      clearTimeout(timer);
    }
    if (this.client.status === 'end') return;
    // disconnect() only starts closing the socket; resolve once it is gone so that nothing of
    // the store outlives close() (a bounded wait: a dead socket must not hold up shutdown).
    const ended = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 1000);
      this.client.once('end', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.client.disconnect(false);
    await ended;
  }

  #storeError(err: unknown): Error {
    if (err instanceof KitError) return err;
    const error = err instanceof Error ? err : new Error(String(err));
    const message = scrub(error.message, this.url.secrets);
    if (error.name === 'ReplyError' && !UNAVAILABLE_REPLIES.test(message)) {
      return new KitError('KIT_ERR_STORE_FAILED', `Redis refused a store command: ${message}`, { cause: error });
    }
    let reason: string;
    if (error.name === 'ReplyError') reason = `server replied ${message.split(' ')[0] ?? 'an error'}`;
    else if (/timed out/i.test(message)) reason = `no reply within ${this.settings.commandTimeoutMs} ms`;
    else if (error.name === 'MaxRetriesPerRequestError') reason = 'connection lost before the reply';
    // The socket went away between the `ready` check and the write (its close event not yet seen):
    // the same answer as a call refused up front.
    else if (/writeable|closed/i.test(message)) reason = `not connected: ${this.#failure ?? 'connection lost'}`;
    else reason = 'connection error';
    return new StoreUnavailableError('redis', reason, { cause: error });
  }
}
