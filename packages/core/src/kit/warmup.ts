import { coreErrors } from '../shared/errors.js';
import type { IWarmup, WarmupTask } from './options.js';
import { buildService, type KitServices, type ServiceClass } from '../shared/services.js';

function isWarmupClass(task: WarmupTask): task is ServiceClass<IWarmup> {
  return typeof (task.prototype as Partial<IWarmup> | undefined)?.warmup === 'function';
}

/**
 * Runs every warm-up task in parallel. Past `timeoutMs` the signal aborts and the run rejects with
 * `KIT_ERR_WARMUP_TIMEOUT` even if a task ignores its signal, so start-up never hangs.
 */
export async function runWarmups(
  tasks: readonly WarmupTask[],
  services: KitServices,
  timeoutMs: number,
): Promise<void> {
  if (tasks.length === 0) return;
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = coreErrors.error('KIT_ERR_WARMUP_TIMEOUT', { timeoutMs });
      controller.abort(err);
      reject(err);
    }, timeoutMs);
  });
  try {
    await Promise.race([
      Promise.all(
        tasks.map(async (task) => {
          if (isWarmupClass(task)) await buildService(services, task).warmup(controller.signal);
          else await (task as (signal: AbortSignal) => void | Promise<void>)(controller.signal);
        }),
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
