// The order in which one Kit app closes, whatever closes it (`app.close()`, `app.kit.shutdown()`,
// a signal): capabilities and plugins register steps in a phase instead of adding their own
// Fastify hooks, whose order (onClose hooks run last-added first) would put a database's close
// before the audit flush that may still write to it.
//
// 1. `unready`: the app stops being ready (`/healthz` answers 503); it still serves requests.
//    Runs when the shutdown begins, before the server stops accepting connections.
//    (Graceful shutdown then waits `shutdownDelayMs` and drains the connections; Fastify's close
//    lets in-flight requests finish.)
// 2. `flush`: queued work is written (the audit trail, an outbox); these steps run together.
// 3. `release`: connections and pools close (AutoCrud's database, the Redis store), one at a time,
//    the last added first, as resources opened later may use those opened before them.
import type { FastifyInstance } from 'fastify';
import { redactError } from '../shared/secrets.js';

/**
 * When a shutdown step runs: `unready` as the shutdown begins, `flush` once in-flight requests
 * have finished, `release` last.
 *
 * @example
 * ```ts
 * app.kit.onShutdown('release', 'reports database', () => reports.end());
 * ```
 */
export type ShutdownPhase = 'unready' | 'flush' | 'release';

/** One step of an app's shutdown. */
export interface ShutdownStep {
  /** Names the step in the log when it fails. */
  readonly name: string;
  run(): void | Promise<void>;
  /**
   * The shutdown's bound ran out while this step ran: give up, and return the error that says
   * what was lost (or `undefined` when nothing was). Only `flush` steps are asked.
   */
  abandon?(boundMs: number): Error | undefined;
}

const PHASES: readonly ShutdownPhase[] = ['unready', 'flush', 'release'];

/** An app's shutdown steps, by phase. */
export class ShutdownSteps {
  readonly #steps: Record<ShutdownPhase, ShutdownStep[]> = { unready: [], flush: [], release: [] };
  readonly #running = new Set<ShutdownStep>();
  #unready = false;

  /** Adds a step to a phase; steps added after their phase has run are not run. */
  add(phase: ShutdownPhase, step: ShutdownStep): void {
    if (!PHASES.includes(phase)) throw new TypeError(`Unknown shutdown phase ${JSON.stringify(phase)}: expected one of ${PHASES.join(', ')}.`);
    this.#steps[phase].push(step);
  }

  /** Phase 1, once (the shutdown's start and Fastify's preClose both ask for it). */
  unready(log: FastifyInstance['log']): void {
    if (this.#unready) return;
    this.#unready = true;
    for (const step of this.#steps.unready) {
      try {
        void Promise.resolve(step.run()).catch((err: unknown) => failed(log, step, err));
      } catch (err) {
        failed(log, step, err);
      }
    }
  }

  /**
   * Phases 2 and 3. Every step runs even when one before it failed; the first failure is thrown
   * at the end (each is logged).
   */
  async close(log: FastifyInstance['log']): Promise<void> {
    const errors: unknown[] = [];
    const attempt = async (step: ShutdownStep): Promise<void> => {
      this.#running.add(step);
      try {
        await step.run();
      } catch (err) {
        errors.push(err);
        failed(log, step, err);
      } finally {
        this.#running.delete(step);
      }
    };
    await Promise.all(this.#steps.flush.map(attempt));
    for (const step of [...this.#steps.release].reverse()) await attempt(step);
    if (errors.length > 0) throw errors[0];
  }

  /**
   * The shutdown's bound ran out: the `flush` steps still running give up. Returns the error that
   * says what they lost, or `undefined` when none was running.
   */
  abandon(boundMs: number): Error | undefined {
    const lost = [...this.#running].map((step) => step.abandon?.(boundMs)).filter((e): e is Error => e !== undefined);
    return lost.length <= 1 ? lost[0] : new AggregateError(lost, lost.map((e) => e.message).join(' '));
  }
}

function failed(log: FastifyInstance['log'], step: ShutdownStep, err: unknown): void {
  try {
    log.error({ err: redactError(err), step: step.name }, `Kit: shutdown step '${step.name}' failed`);
  } catch {
    // a broken logger must not keep the other steps from running
  }
}

/**
 * Runs `steps` as `app` closes: `unready` in Fastify's preClose (when the shutdown did not begin
 * with `app.kit.shutdown()` or a signal), `flush` and `release` in one onClose hook.
 */
export function installShutdownSteps(app: FastifyInstance, steps: ShutdownSteps): void {
  app.addHook('preClose', (done) => {
    steps.unready(app.log);
    done();
  });
  app.addHook('onClose', () => steps.close(app.log));
}
