import { KitError } from '@kit/core';
import { CompiledQuery, Kysely, PostgresDialect } from 'kysely';
import {
  classifySqlState,
  sqlStateReason,
  type DynamicDatabase,
  type Engine,
} from '../../sql/engine.js';
import {
  DatabaseBusyError,
  DatabaseUnavailableError,
  StatementTimeoutError,
} from '../../errors.js';
import type { ConnectionTarget } from '../shared/connection-string.js';
import { GuardedPool } from './pool.js';
import { ProbeConnection } from './probe.js';
import { postgresDialect } from './dialect.js';
import { postgresMigrationSession } from './migration-session.js';

/** Settings of the PostgreSQL engine. */
export interface PostgresSettings {
  readonly poolSize: number;
  readonly connectTimeoutMs: number;
  readonly acquireTimeoutMs: number;
  readonly statementTimeoutMs: number;
  /** Where a connection's failure outside a statement (an idle connection dropped by the server) is reported. */
  readonly onIdleError: (reason: string) => void;
}

/** `application_name` of the pool's connections (what `pg_stat_activity` shows), and of the health check's. */
const APPLICATION_NAME = 'kit-autocrud';
const PROBE_APPLICATION_NAME = 'kit-autocrud-health';

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
const CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection terminated unexpectedly|Query read timeout|Client was closed|Cannot use a pool after calling end/i;

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// SQLSTATEs of a connection that broke while in use (connect failures never reach classify: the
// pool reports them as DatabaseUnavailableError): admin_shutdown (pg_terminate_backend, a fast
// shutdown), crash_shutdown, idle_session_timeout, and the connection_exception class.
const LOST_STATES = /^(57P0[125]|08\d{3})$/;

/**
 * PostgreSQL through `pg`: a pool of `poolSize` connections that survives its server going away,
 * bounds the wait for a connection, cancels abandoned statements (see pool.ts), and a
 * connection of its own for the health check. Closed with the engine.
 */
export function postgresEngine(
  target: Extract<ConnectionTarget, { kind: 'postgres' }>,
  settings: PostgresSettings,
): Engine {
  const reason = (err: unknown): string => {
    if (err instanceof DatabaseUnavailableError) return err.reason;
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
  const pool = new GuardedPool({
    url: target.url,
    poolSize: settings.poolSize,
    connectTimeoutMs: settings.connectTimeoutMs,
    acquireTimeoutMs: settings.acquireTimeoutMs,
    statementTimeoutMs: settings.statementTimeoutMs,
    applicationName: APPLICATION_NAME,
    reason,
    onConnectionError: settings.onIdleError,
  });
  const probe = new ProbeConnection({
    url: target.url,
    connectTimeoutMs: settings.connectTimeoutMs,
    applicationName: PROBE_APPLICATION_NAME,
    reason,
  });
  const db = new Kysely<DynamicDatabase>({ dialect: new PostgresDialect({ pool }) });
  let closed = false;

  return {
    kind: 'postgres',
    dialect: postgresDialect,
    servesInstances: true,
    db,
    async open() {
      try {
        await db.executeQuery(CompiledQuery.raw('select 1'));
      } catch (err) {
        throw err instanceof KitError
          ? err
          : new DatabaseUnavailableError(reason(err), { cause: err });
      }
    },
    async execute(query, name, signal) {
      // Straight to the pool: Kysely's driver would take a client, run the query and release it the
      // same way, with more steps per call.
      const config = { text: query.sql, values: query.parameters as unknown[] };
      const lease = await pool.connect(signal);
      try {
        return (await lease.run(name === '' ? config : { ...config, name })).rows as Array<
          Record<string, unknown>
        >;
      } finally {
        lease.release();
      }
    },
    probe: (signal) => probe.ping(signal),
    migrationSession: (lockTimeoutMs) =>
      postgresMigrationSession(target.url, settings.connectTimeoutMs, lockTimeoutMs),
    classify(err) {
      if (err instanceof DatabaseBusyError) return 'busy';
      if (err instanceof StatementTimeoutError) return 'timeout';
      // Thrown by the pool when a connection cannot be made, or the server is hung.
      if (err instanceof DatabaseUnavailableError) return 'unavailable';
      const code = codeOf(err);
      // Anything else that goes wrong with the connection went wrong on an established one.
      if (NETWORK_REASONS[code] || LOST_STATES.test(code)) return 'lost';
      const fromState = /^[0-9A-Z]{5}$/.test(code) ? classifySqlState(code) : undefined;
      if (fromState) return fromState;
      return CONNECTION_MESSAGES.test(messageOf(err)) ? 'lost' : 'other';
    },
    reason,
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all([db.destroy(), probe.close()]);
    },
  };
}
