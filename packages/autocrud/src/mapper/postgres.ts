import { CompiledQuery, Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { classifySqlState, sqlStateReason, type DynamicDatabase, type Engine } from './engine.js';
import { DatabaseUnavailableError } from './errors.js';
import type { ConnectionTarget } from './connection-string.js';

/** Settings of the PostgreSQL engine. */
export interface PostgresSettings {
  readonly poolSize: number;
  readonly connectTimeoutMs: number;
  /** Where pool-level failures (an idle connection dropped by the server) are reported. */
  readonly onIdleError: (reason: string) => void;
}

const NETWORK_REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  ETIMEDOUT: 'connect timed out',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

// pg's own messages for a connection that failed or went away (it sets no code on them).
const CONNECTION_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection terminated unexpectedly|Query read timeout|Client was closed|Cannot use a pool after calling end/i;

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** PostgreSQL through `pg`: a pool of `poolSize` connections, closed with the engine. */
export function postgresEngine(target: Extract<ConnectionTarget, { kind: 'postgres' }>, settings: PostgresSettings): Engine {
  const pool = new pg.Pool({
    connectionString: target.url,
    max: settings.poolSize,
    connectionTimeoutMillis: settings.connectTimeoutMs,
    idleTimeoutMillis: 10_000,
    application_name: 'kit-autocrud',
  });
  const reason = (err: unknown): string => {
    const code = codeOf(err);
    if (NETWORK_REASONS[code]) return NETWORK_REASONS[code];
    const fromState = sqlStateReason(code);
    if (fromState) return fromState;
    const message = messageOf(err);
    if (/timeout exceeded when trying to connect/i.test(message)) return 'connect timed out';
    if (/Cannot use a pool after calling end/i.test(message)) return 'closed';
    if (CONNECTION_MESSAGES.test(message)) return 'connection lost';
    return 'connection error';
  };
  // Without a listener, an idle connection the server drops (a restart) would crash the process.
  pool.on('error', (err) => settings.onIdleError(reason(err)));
  const db = new Kysely<DynamicDatabase>({ dialect: new PostgresDialect({ pool }) });
  let closed = false;

  return {
    kind: 'postgres',
    flavour: 'postgres',
    db,
    async open() {
      try {
        await db.executeQuery(CompiledQuery.raw('select 1'));
      } catch (err) {
        throw new DatabaseUnavailableError(reason(err), { cause: err });
      }
    },
    classify(err) {
      const code = codeOf(err);
      if (NETWORK_REASONS[code]) return 'unavailable';
      const fromState = /^[0-9A-Z]{5}$/.test(code) ? classifySqlState(code) : undefined;
      if (fromState) return fromState;
      return CONNECTION_MESSAGES.test(messageOf(err)) ? 'unavailable' : 'other';
    },
    reason,
    async close() {
      if (closed) return;
      closed = true;
      await db.destroy();
    },
  };
}
