// The one owner of process signals for every Kit app in the process: nothing else in Kit calls
// process.on for a signal. Two kinds of app register with it:
//
// - An app with `configureGracefulShutdown` (a ShutdownOnSignal): on one of its signals it shuts
//   down (readiness 503, delay, drain, close), and when every app so shut down has closed, the
//   process exits with the worst of their exit codes. A further signal during that shutdown
//   exits at once with 128 + the signal number.
// - An app whose audit trail must not die with queued entries (a FlushOnSignal,
//   `ensureFlushOnShutdown`): without a listener, Node lets SIGTERM and SIGINT end the process at
//   once and whatever is queued, or buffered by pino's asynchronous destination, is lost. When a
//   signal arrives that no Kit app shuts down on and that nothing else in the process listens
//   to, the owner writes what is queued, bounded in time, removes its listeners and raises the
//   same signal again, so the process ends as Node ends it without a handler: killed by that
//   signal. A second signal during the flush ends it at once. When the host listens to the
//   signal itself, Kit leaves it alone: the host decides. When a graceful shutdown ends the
//   process, the other apps' queues are written first.
//
// Each app's registration is its own: one app closing leaves the others' handling as it was. The
// state below is the process's, as signals are.
import { constants } from 'node:os';

/** An app that shuts down gracefully on its signals. */
interface ShutdownOnSignal {
  readonly signals: readonly NodeJS.Signals[];
  /** Runs the app's shutdown; resolves with the exit code it asks for (0 clean, 1 not). */
  shutdown(signal: NodeJS.Signals): Promise<number>;
  /** A further signal arrived during the shutdown: says so; the process exits right after. */
  interrupted(signal: NodeJS.Signals): void;
  /** The process exits now with `code`: says so and writes what the logger buffers, in at most `withinMs`. */
  exiting(code: number, withinMs: number): Promise<void>;
}

/** Queued work to write before a signal ends the process. */
export interface FlushOnSignal {
  /**
   * Writes what is queued. `ending` says what ends the process afterwards: the signal itself
   * (nothing else handles it) or another app's graceful shutdown. Bounded by `signalFlushTimeoutMs`.
   */
  flushForSignal(signal: NodeJS.Signals, ending: 'signal' | 'shutdown'): Promise<void>;
  readonly signalFlushTimeoutMs: number;
}

const FLUSH_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];
/**
 * How long the loggers may take to write what they buffer before the process exits, while they
 * make progress (lifecycle/log-flush.ts says why it is this long).
 */
const EXIT_FLUSH_MS = 10_000;
/** The same after a second signal: whoever sends it wants the process gone, not the log complete. */
const INTERRUPTED_EXIT_FLUSH_MS = 1000;

const graceful = new Set<ShutdownOnSignal>();
const flushes = new Set<FlushOnSignal>();
const listening = new Set<NodeJS.Signals>();
/** Apps in a signal-driven shutdown, and what they resolve with; they stay registered until the exit. */
const signalled = new Map<ShutdownOnSignal, Promise<number>>();
let flushing = false;
/** The code of the latest exit asked for. */
let exitCode = 0;

function busy(): boolean {
  return signalled.size > 0 || flushing;
}

/** Listens to exactly the signals some registration needs; while a shutdown or flush runs, keeps every listener. */
function sync(): void {
  const wanted = new Set<NodeJS.Signals>(flushes.size > 0 ? FLUSH_SIGNALS : []);
  for (const app of graceful) for (const s of app.signals) wanted.add(s);
  for (const s of wanted) {
    if (listening.has(s)) continue;
    process.on(s, onSignal);
    listening.add(s);
  }
  if (busy()) return;
  for (const s of listening) {
    if (wanted.has(s)) continue;
    process.removeListener(s, onSignal);
    listening.delete(s);
  }
}

function exitCodeOf(signal: NodeJS.Signals): number {
  // The shell convention for "terminated by signal N".
  return 128 + (constants.signals[signal] ?? 15);
}

/** Removes every listener and raises `signal` again: the process ends as Node ends it without a handler. */
function die(signal: NodeJS.Signals): void {
  for (const s of listening) process.removeListener(s, onSignal);
  listening.clear();
  process.kill(process.pid, signal);
}

/** Writes every queued flush target, bounded by the longest of their bounds. */
async function flushAll(signal: NodeJS.Signals, ending: 'signal' | 'shutdown'): Promise<void> {
  let bound = 0;
  for (const t of flushes) bound = Math.max(bound, t.signalFlushTimeoutMs);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, bound);
  });
  const writes = [...flushes].map((t) => t.flushForSignal(signal, ending).catch(() => undefined));
  await Promise.race([Promise.all(writes), timeout]);
  clearTimeout(timer);
}

/**
 * Exits with `code` once the shutting-down apps' loggers have written what they buffer (at most
 * `withinMs`). A later call (a second signal during the flush) shortens the wait and its code
 * wins, whichever wait ends first: the process was interrupted.
 */
function exit(code: number, withinMs: number): void {
  exitCode = code;
  // If the loggers never call back and the event loop empties first, Node exits with this code.
  process.exitCode = code;
  // The apps keep to `withinMs` themselves (a flush cut short by this outer bound could tear a
  // line in flight); the margin only covers one whose logger never calls back.
  const bound = new Promise<void>((resolve) => setTimeout(resolve, withinMs + 100).unref());
  const said = [...signalled.keys()].map((app) =>
    app.exiting(code, withinMs).catch(() => undefined),
  );
  void Promise.race([Promise.all(said), bound]).then(() => process.exit(exitCode));
}

function onSignal(signal: NodeJS.Signals): void {
  const apps = [...graceful].filter((app) => app.signals.includes(signal));
  if (apps.length > 0) {
    const again = apps.filter((app) => signalled.has(app));
    if (again.length > 0) {
      for (const app of again) app.interrupted(signal);
      exit(exitCodeOf(signal), INTERRUPTED_EXIT_FLUSH_MS);
      return;
    }
    const first = signalled.size === 0;
    for (const app of apps) signalled.set(app, app.shutdown(signal));
    if (first) void settle(signal);
    return;
  }
  if (flushing) {
    die(signal);
    return;
  }
  // Another listener owns this signal (the host's): whatever it does (exit, drain, ignore) stays as it is.
  if (process.listenerCount(signal) > 1 || signalled.size > 0 || flushes.size === 0) return;
  flushing = true;
  void flushAll(signal, 'signal').then(() => die(signal));
}

/** Waits for every signal-driven shutdown (also those a later signal starts), then writes the other apps' queues and exits. */
async function settle(signal: NodeJS.Signals): Promise<void> {
  let worst = 0;
  for (let seen = 0; seen < signalled.size; seen = signalled.size) {
    for (const code of await Promise.all(signalled.values())) worst = Math.max(worst, code);
  }
  if (flushes.size > 0) {
    flushing = true;
    await flushAll(signal, 'shutdown');
  }
  exit(worst, EXIT_FLUSH_MS);
}

/**
 * Shuts `app` down on its signals. Returns the function that stops it (when the app closes by
 * other means); after a signal it does nothing, so that a second signal is still caught.
 */
export function onShutdownSignals(app: ShutdownOnSignal): () => void {
  graceful.add(app);
  sync();
  return () => {
    if (signalled.has(app) || !graceful.delete(app)) return;
    sync();
  };
}

/**
 * Writes `target`'s queue when the process receives SIGTERM or SIGINT that nothing else handles,
 * or before a graceful shutdown of another app ends it. Returns the function that stops it (the
 * audit trail calls it when its app closes).
 */
export function flushOnSignals(target: FlushOnSignal): () => void {
  flushes.add(target);
  sync();
  return () => {
    if (!flushes.delete(target)) return;
    sync();
  };
}

/**
 * A set of listeners that one `process` listener runs in turn, installed by `install` on first use.
 * Each listener runs even when one before it throws: at exit nothing could report it any more.
 */
function processHook(install: (run: () => void) => void): (listener: () => void) => () => void {
  const listeners = new Set<() => void>();
  let installed = false;
  const run = (): void => {
    for (const listener of listeners) {
      try {
        listener();
      } catch {
        // the others still run
      }
    }
  };
  return (listener) => {
    listeners.add(listener);
    if (!installed) {
      installed = true;
      install(run);
    }
    return () => {
      listeners.delete(listener);
    };
  };
}

const addExitListener = processHook((run) => process.once('exit', run));
// Prepended: pino's own `beforeExit` listener, installed when the logger was made, ends its destination.
const addDrainedListener = processHook((run) => process.prependListener('beforeExit', run));

/**
 * Runs `listener` synchronously when the process exits (`process.exit()`, or the event loop runs
 * dry), for clean-up that must not outlive the process, such as a lock file. A killed process
 * runs nothing: whatever the listener cleans must also be recoverable by the next start.
 *
 * @returns the function that removes the listener.
 * @example
 * import { onProcessExit } from '@kit/core/extend';
 * const stop = onProcessExit(() => rmSync(lockFile, { force: true }));
 * // on a clean release: stop(); rmSync(lockFile, { force: true });
 */
export function onProcessExit(listener: () => void): () => void {
  return addExitListener(listener);
}

/**
 * Runs `listener` when the event loop runs dry (`beforeExit`: the process would end because
 * nothing is left to do, without `app.close()` or a signal), before the `beforeExit` listeners
 * installed earlier. pino's own destination ends itself there, so work handed to a logger must
 * come first: the audit trail writes its held lines (asyncWrite) here. What the listener starts
 * keeps the process alive until it is done, and the event fires again afterwards.
 *
 * @returns the function that removes the listener.
 */
export function onLoopDrained(listener: () => void): () => void {
  return addDrainedListener(listener);
}
