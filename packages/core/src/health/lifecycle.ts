import { constants } from 'node:os';
import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { KitError } from '../shared/errors.js';
import { ConnectionDrain } from './drain.js';
import { redactError } from '../shared/secrets.js';
import { DEFAULT_DRAIN_TIMEOUT_MS } from './shutdown-options.js';
import type { AuditCloseControl, KitLifecycle } from './state.js';

// One shutdown per running layer: a second call, or a signal after a programmatic call, joins it.
const shutdowns = new WeakMap<KitLifecycle, Promise<void>>();
// The connections of each layer's server, tracked from useKit on so the drain can close them one by one.
const drains = new WeakMap<KitLifecycle, ConnectionDrain>();

// Signal-driven shutdowns of every Kit app in this process. The process exits when the last one
// has closed, so two apps in one process do not cut each other's drain short.
let signalShutdowns = 0;
let worstExitCode = 0;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// After the drain bound, how long close() may still take to run its onClose hooks.
const CLOSE_GRACE_MS = 1000;

/**
 * `app.close()` bounded by what is left of `drainTimeoutMs` (`remainingMs`). Past the bound the remaining connections are cut, so
 * close() can still finish and run its onClose hooks (the audit trail's flush among them) within
 * a short grace, and the rejection then tells the caller the drain was not clean. When the bound
 * finds the requests drained and the audit flush still running (a hung sink), the flush is what
 * overran: its entries are counted failed and the rejection says so.
 */
async function closeWithin(app: FastifyInstance, remainingMs: number, drainTimeoutMs: number, audit: Partial<AuditCloseControl>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const closing = app.close();
  const bound = (ms: number) =>
    new Promise<'timeout'>((resolve) => {
      timer = setTimeout(resolve, ms, 'timeout');
    });
  try {
    if ((await Promise.race([closing, bound(remainingMs)])) !== 'timeout') return;
    clearTimeout(timer);
    const flushOverran = audit.abandonCloseFlush?.(drainTimeoutMs);
    if (flushOverran === undefined) app.server.closeAllConnections();
    await Promise.race([closing, bound(CLOSE_GRACE_MS)]);
    if (flushOverran !== undefined) throw flushOverran;
    // The flush may have started in the grace and hung too: its entries count as failed all the same.
    const alsoFlush = audit.abandonCloseFlush?.(drainTimeoutMs);
    throw new KitError(
      'KIT_ERR_DRAIN_TIMEOUT',
      `In-flight requests did not finish within gracefulShutdown.drainTimeoutMs (${drainTimeoutMs} ms); the remaining connections were closed.` +
        (alsoFlush === undefined ? '' : ` ${alsoFlush.message}`),
    );
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The graceful shutdown sequence behind `app.kit.shutdown()` and the signal handlers:
 *
 * 1. `state = 'shuttingDown'`: `/healthz` answers 503 with the `shutdown` entry at once, while
 *    the server keeps serving every route (`/livez` included).
 * 2. `shutdownDelayMs` passes, so load balancers and Kubernetes endpoints stop routing here while
 *    requests still succeed (skipped when the server is not listening: nothing can arrive).
 *    Keep-alive connections stay open and are served as usual.
 * 3. The connection drain: no new connections; every response now says `Connection: close`, so
 *    each keep-alive client gets its next request answered and then reconnects elsewhere; a
 *    connection idle for `IDLE_GRACE_MS` is closed.
 * 4. `app.close()`: in-flight requests finish, onClose hooks run (the audit trail flushes there).
 *    Steps 3 and 4 together are bounded by `drainTimeoutMs`.
 *
 * Readiness must turn 503 before `close()`, and the connections must be drained before it: once
 * Fastify is closing it answers every new request with its own 503 before any route runs.
 */
export function shutdownKit(kit: KitLifecycle, reason = 'shutdown()'): Promise<void> {
  const running = shutdowns.get(kit);
  if (running) return running;
  const { app } = kit;
  const g = kit.options.gracefulShutdown;
  kit.state = 'shuttingDown';
  const delayMs = app.server.listening ? (g?.shutdownDelayMs ?? 0) : 0;
  const drainTimeoutMs = g?.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
  const run = (async () => {
    app.log.info({ reason, shutdownDelayMs: delayMs, drainTimeoutMs }, `Kit: shutdown started (${reason}); readiness answers 503, closing in ${delayMs} ms`);
    if (delayMs > 0) await sleep(delayMs);
    app.log.info('Kit: closing the server and draining in-flight requests');
    const deadline = performance.now() + drainTimeoutMs;
    await drains.get(kit)?.drain(AbortSignal.timeout(drainTimeoutMs));
    // What the connection drain used of the bound is left out; errors name the configured bound.
    await closeWithin(app, Math.max(0, deadline - performance.now()), drainTimeoutMs, kit.audit);
    app.log.info('Kit: server closed');
  })();
  shutdowns.set(kit, run);
  return run;
}

function exitCodeOf(signal: NodeJS.Signals): number {
  // The shell convention for "terminated by signal N".
  return 128 + (constants.signals[signal] ?? 15);
}

// Loggers may buffer (pino with sync: false, transports): flush before exiting, bounded.
function flushThenExit(app: FastifyInstance, code: number): void {
  const logger = app.log as { flush?: (cb?: (err?: Error) => void) => void };
  // If the flush never calls back and the event loop empties first, Node exits with this code.
  process.exitCode = code;
  let exited = false;
  const exit = (): void => {
    if (exited) return;
    exited = true;
    process.exit(code);
  };
  setTimeout(exit, 1000).unref();
  if (typeof logger.flush === 'function') {
    try {
      logger.flush(() => exit());
      return;
    } catch {
      // fall through: exit without the flush rather than not at all
    }
  }
  exit();
}

/**
 * Installs the signal handlers of `opt.configureGracefulShutdown`. The first signal runs
 * `shutdownKit` and exits 0 once the server has closed (1 if the drain timed out or close
 * failed); a second signal exits at once with 128 + the signal number. The listeners are removed
 * when the app closes without a signal (tests, in-process hosts), so nothing leaks; after a
 * signal they stay until the exit so that the second signal is still caught.
 */
export function installGracefulShutdown(app: FastifyInstance, kit: KitLifecycle): void {
  const g = kit.options.gracefulShutdown;
  if (!g) return;
  let received = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    received += 1;
    if (received > 1) {
      app.log.warn({ signal }, `Kit: second ${signal} received during shutdown; exiting now`);
      flushThenExit(app, exitCodeOf(signal));
      return;
    }
    signalShutdowns += 1;
    void shutdownKit(kit, signal).then(
      () => 0,
      (err: unknown) => {
        app.log.error({ err: redactError(err) }, 'Kit: shutdown did not complete cleanly');
        return 1;
      },
    ).then((code) => {
      worstExitCode = Math.max(worstExitCode, code);
      signalShutdowns -= 1;
      if (signalShutdowns === 0) {
        app.log.info({ exitCode: worstExitCode }, `Kit: exiting with ${worstExitCode}`);
        flushThenExit(app, worstExitCode);
      }
    });
  };
  for (const signal of g.signals) process.on(signal, onSignal);
  app.addHook('onClose', (_instance, done) => {
    if (received === 0) for (const signal of g.signals) process.removeListener(signal, onSignal);
    done();
  });
}

/**
 * Tracks the server's connections for the drain of `shutdownKit` (HTTP/1 servers; an HTTP/2
 * server is closed by `app.close()` alone), and marks an app closed by other means (`app.close()`
 * from the host) as shutting down, so `app.kit.state` tells the truth and a late readiness probe
 * is not answered 200.
 */
export function trackLifecycle(app: FastifyInstance, kit: KitLifecycle): void {
  if (app.initialConfig.http2 !== true) drains.set(kit, new ConnectionDrain(app.server as Server));
  app.addHook('preClose', (done) => {
    kit.state = 'shuttingDown';
    done();
  });
}
