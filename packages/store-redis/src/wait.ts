// Bounded waits on promises and ioredis connections.
import type { Redis } from 'ioredis';
import { StoreUnavailableError } from '@kit/core';

/** Rejects with a StoreUnavailableError when `signal` aborts first. */
export function untilAborted<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
  reason: string,
): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(new StoreUnavailableError('redis', reason));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new StoreUnavailableError('redis', reason));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Resolves when one node connection is ready, has failed or ended, or after `timeoutMs`. */
export function settled(node: Redis, timeoutMs: number): Promise<void> {
  if (node.status === 'ready' || node.status === 'end' || timeoutMs <= 0) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      for (const event of ['ready', 'error', 'end'] as const) node.off(event, done);
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    for (const event of ['ready', 'error', 'end'] as const) node.once(event, done);
  });
}
