// SIGTERM and SIGINT for a process whose audit entries would otherwise die with it.
//
// Without a listener, Node lets these signals end the process at once: whatever the audit trail
// still queues, and whatever pino's asynchronous destination still buffers, is lost (2 of 2
// entries lost in the report of issue 11). Kit listens, but only acts when nobody else does: if
// the host (or Kit's own graceful shutdown) has a listener for the signal when it arrives, Kit
// does nothing and the process behaves exactly as that listener decides. Otherwise Kit writes
// what is queued, bounded in time, removes its listeners and raises the same signal again, so the
// process ends as Node ends it without a handler: killed by that signal (exit status 128 + the
// signal number in a shell, `signal === 'SIGTERM'` for a parent process). A second signal during
// the flush ends it at once.

/** An audit trail whose queue must be written before the process dies of a signal. */
export interface SignalFlushTarget {
  /** Writes what is queued (and what the logger buffers); Kit bounds the wait by `signalFlushTimeoutMs`. */
  flushForSignal(signal: NodeJS.Signals): Promise<void>;
  readonly signalFlushTimeoutMs: number;
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];
const targets = new Set<SignalFlushTarget>();
let flushing = false;

function die(signal: NodeJS.Signals): void {
  for (const s of SIGNALS) process.removeListener(s, onSignal);
  process.kill(process.pid, signal);
}

function onSignal(signal: NodeJS.Signals): void {
  // Another listener owns this signal: whatever it does (exit, drain, ignore) stays as it is.
  if (process.listenerCount(signal) > 1) return;
  if (flushing) {
    die(signal);
    return;
  }
  flushing = true;
  let bound = 0;
  for (const t of targets) bound = Math.max(bound, t.signalFlushTimeoutMs);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, bound);
  });
  const flushes = [...targets].map((t) => t.flushForSignal(signal).catch(() => undefined));
  void Promise.race([Promise.all(flushes), timeout]).then(() => {
    clearTimeout(timer);
    die(signal);
  });
}

/**
 * Flushes `target` when the process receives SIGTERM or SIGINT that nothing else handles.
 * Returns the function that stops it (the trail calls it when its app closes); the listeners are
 * shared by every Kit app in the process and removed with the last one.
 */
export function flushOnSignals(target: SignalFlushTarget): () => void {
  if (targets.size === 0) for (const s of SIGNALS) process.on(s, onSignal);
  targets.add(target);
  return () => {
    if (!targets.delete(target) || targets.size > 0 || flushing) return;
    for (const s of SIGNALS) process.removeListener(s, onSignal);
  };
}
