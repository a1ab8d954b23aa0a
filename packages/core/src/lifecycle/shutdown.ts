// The graceful shutdown: the `unready`, `drain`, `flush` and `release` phases as one sequence
// (phases.ts has the table), and its handing to the process's signal owner (signals.ts).
import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { coreErrors } from '../shared/errors.js';
import { redactError } from '../shared/secrets.js';
import { ConnectionDrain } from './drain.js';
import { flushLoggerForExit } from './log-flush.js';
import type { LifecyclePhases } from './phases.js';
import { DEFAULT_DRAIN_TIMEOUT_MS, type GracefulShutdownOptions } from './shutdown-options.js';
import { onShutdownSignals } from './signals.js';

/**
 * What the shutdown reads of the running layer (`KitRuntime` is one): declared here, so that
 * lifecycle, a floor below the capabilities, imports none of them.
 *
 * @example
 * ```ts
 * const target: ShutdownTarget = { app, options: { gracefulShutdown: undefined }, phases: new LifecyclePhases() };
 * await shutdownKit(target);
 * ```
 */
export interface ShutdownTarget {
  readonly app: FastifyInstance;
  readonly options: { readonly gracefulShutdown: Readonly<GracefulShutdownOptions> | undefined };
  /** The app's phase steps (readiness, the audit flush, the database's close...). */
  readonly phases: LifecyclePhases;
}

// One shutdown per running layer: a second call, or a signal after a programmatic call, joins it.
const shutdowns = new WeakMap<ShutdownTarget, Promise<void>>();
// The connections of each layer's server, tracked from useKit on so the drain can close them one by one.
const drains = new WeakMap<ShutdownTarget, ConnectionDrain>();

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// After the drain bound, how long close() may still take to run its onClose hooks.
const CLOSE_GRACE_MS = 1000;

/**
 * `app.close()` bounded by what is left of `drainTimeoutMs` (`remainingMs`). Past the bound the remaining connections are cut, so
 * close() can still finish and run its shutdown steps (the audit trail's flush among them) within
 * a short grace, and the rejection then tells the caller the drain was not clean. When the bound
 * finds the requests drained and a flush step still running (a hung audit sink), the flush is what
 * overran: it gives up (the audit counts its entries failed) and the rejection says so.
 */
async function closeWithin(
  app: FastifyInstance,
  remainingMs: number,
  drainTimeoutMs: number,
  steps: LifecyclePhases,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const closing = app.close();
  const bound = (ms: number) =>
    new Promise<'timeout'>((resolve) => {
      timer = setTimeout(resolve, ms, 'timeout');
    });
  try {
    if ((await Promise.race([closing, bound(remainingMs)])) !== 'timeout') return;
    clearTimeout(timer);
    const flushOverran = steps.abandon(drainTimeoutMs);
    if (flushOverran === undefined) app.server.closeAllConnections();
    await Promise.race([closing, bound(CLOSE_GRACE_MS)]);
    if (flushOverran !== undefined) throw flushOverran;
    // The flush may have started in the grace and hung too: its entries count as failed all the same.
    const alsoFlush = steps.abandon(drainTimeoutMs);
    throw coreErrors.error('KIT_ERR_DRAIN_TIMEOUT', {
      drainTimeoutMs,
      flush: alsoFlush === undefined ? '' : ` ${alsoFlush.message}`,
    });
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The graceful shutdown sequence behind `app.kit.shutdown()` and the signal handlers:
 *
 * 1. The `unready` shutdown steps: `state = 'shuttingDown'`, so `/healthz` answers 503 with the
 *    `shutdown` entry at once, while the server keeps serving every route (`/livez` included).
 * 2. `shutdownDelayMs` passes, so load balancers and Kubernetes endpoints stop routing here while
 *    requests still succeed (skipped when the server is not listening: nothing can arrive).
 *    Keep-alive connections stay open and are served as usual.
 * 3. The connection drain: no new connections; every response now says `Connection: close`, so
 *    each keep-alive client gets its next request answered and then reconnects elsewhere; a
 *    connection idle for `IDLE_GRACE_MS` is closed.
 * 4. `app.close()`: in-flight requests finish, then the `flush` steps (the audit trail) and the
 *    `release` steps (AutoCrud's database) run. Steps 3 and 4 together are bounded by `drainTimeoutMs`.
 *
 * Readiness must turn 503 before `close()`, and the connections must be drained before it: once
 * Fastify is closing it answers every new request with its own 503 before any route runs.
 */
export function shutdownKit(kit: ShutdownTarget, reason = 'shutdown()'): Promise<void> {
  const running = shutdowns.get(kit);
  if (running) return running;
  const { app } = kit;
  const g = kit.options.gracefulShutdown;
  kit.phases.unready(app.log);
  const delayMs = app.server.listening ? (g?.shutdownDelayMs ?? 0) : 0;
  const drainTimeoutMs = g?.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
  const run = (async () => {
    app.log.info(
      { reason, shutdownDelayMs: delayMs, drainTimeoutMs },
      `Kit: shutdown started (${reason}); readiness answers 503, closing in ${delayMs} ms`,
    );
    if (delayMs > 0) await sleep(delayMs);
    app.log.info('Kit: closing the server and draining in-flight requests');
    const deadline = performance.now() + drainTimeoutMs;
    await drains.get(kit)?.drain(AbortSignal.timeout(drainTimeoutMs));
    // What the connection drain used of the bound is left out; errors name the configured bound.
    await closeWithin(app, Math.max(0, deadline - performance.now()), drainTimeoutMs, kit.phases);
    app.log.info('Kit: server closed');
  })();
  shutdowns.set(kit, run);
  return run;
}

/**
 * Hands the app to the process's signal owner (lifecycle/signals.ts) for
 * `opt.configureGracefulShutdown`'s signals. The first signal runs `shutdownKit`; once every app
 * shut down by a signal has closed, the process exits 0 (1 if a drain timed out or a close
 * failed); a second signal exits at once with 128 + the signal number. The registration ends
 * when the app closes without a signal (tests, in-process hosts), so nothing leaks; after a signal
 * it stays until the exit, so that the second signal is still caught.
 */
export function installGracefulShutdown(app: FastifyInstance, kit: ShutdownTarget): void {
  const g = kit.options.gracefulShutdown;
  if (!g) return;
  const stop = onShutdownSignals({
    signals: g.signals,
    shutdown: (signal) =>
      shutdownKit(kit, signal).then(
        () => 0,
        (err: unknown) => {
          app.log.error({ err: redactError(err) }, 'Kit: shutdown did not complete cleanly');
          return 1;
        },
      ),
    interrupted: (signal) =>
      app.log.warn({ signal }, `Kit: second ${signal} received during shutdown; exiting now`),
    exiting: (code, withinMs) => {
      app.log.info({ exitCode: code }, `Kit: exiting with ${code}`);
      return flushLoggerForExit(app.log, withinMs);
    },
  });
  kit.phases.add('release', { name: 'signal handling', run: stop });
}

/**
 * Tracks the server's connections for the drain of `shutdownKit` (HTTP/1 servers; an HTTP/2
 * server is closed by `app.close()` alone). From `addKit` on, so that connections opened before
 * `useKit` are drained too.
 *
 * @example
 * ```ts
 * trackConnections(kit);   // in addKit
 * ```
 */
export function trackConnections(kit: ShutdownTarget): void {
  if (kit.app.initialConfig.http2 !== true)
    drains.set(kit, new ConnectionDrain(kit.app.server as Server));
}
