// The phases of one Kit app's life, and the one place that ties them to Fastify's hooks.
//
// Capabilities and plugins join a phase (`onPhase(app, phase, name, run)` from `@kit/core/extend`,
// `app.kit.onShutdown` for the shutdown phases) instead of adding their own Fastify hooks: Fastify
// runs onClose hooks last-added first, which would put a database's close before the audit flush
// that may still write to it, and hooks spread over many files hide the order. docs/lifecycle.md
// is the table; in short:
//
// | phase     | when                                                        | joined through           |
// |-----------|-------------------------------------------------------------|--------------------------|
// | configure | `addKit`: options validated, container, checks              | `addKit(app, configure)` |
// | register  | `useKit` before its first await: routes, the plugin tree    | the plugins' own calls   |
// | validate  | `useKit`: operationIds, DI, eager singletons, sink, checks  | (Kit's own)              |
// | warm-up   | `useKit`: warm-up tasks in parallel, under warmupTimeoutMs  | `app.kit.addWarmup`      |
// | ready     | Fastify's ready (`app.ready()`, `listen`): routes are final | `onPhase(app, 'ready')`  |
// |           | and, once warm-up is done, the readiness gate opens         |                          |
// | unready   | the shutdown begins: `/healthz` 503, requests still served  | `onPhase(app, 'unready')`|
// | drain     | shutdownDelayMs, connections drained, in-flight requests end| (Kit's own)              |
// | flush     | queued work written (the audit trail, an outbox), together  | `onPhase(app, 'flush')`  |
// | release   | connections and pools close, one at a time, last added first| `onPhase(app, 'release')`|
//
// `ready` is Fastify's, not the gate's: a host may listen before `useKit` settles, and then the
// instance is ready (Fastify runs its onReady hooks, the server listens) while warm-up still runs
// and `/healthz` answers 503 `startup`. Its steps run one at a time, in the order they were added;
// the first that fails stops the others and fails `app.ready()` (Fastify's own onReady rule).
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

/**
 * The phases a step can be added to with `onPhase`: Fastify's ready, and the three shutdown
 * phases. The others are Kit's own sequence (`configure`, `register`, `validate`, `drain`), or have
 * their own entry (`warm-up`: `app.kit.addWarmup`).
 *
 * @example
 * ```ts
 * const phase: JoinablePhase = 'flush';
 * onPhase(app, phase, 'outbox', () => outbox.stop());
 * ```
 */
export type JoinablePhase = 'ready' | ShutdownPhase;

/** One step of a phase. */
interface PhaseStep {
  /** Names the step in the log when it fails. */
  readonly name: string;
  run(): void | Promise<void>;
  /**
   * The shutdown's bound ran out while this step ran: give up, and return the error that says
   * what was lost (or `undefined` when nothing was). Only `flush` steps are asked.
   */
  abandon?(boundMs: number): Error | undefined;
}

const JOINABLE: readonly JoinablePhase[] = ['ready', 'unready', 'flush', 'release'];

/**
 * An app's phase steps, by phase, and the runs of the phases that Fastify's hooks start.
 *
 * @example
 * ```ts
 * const phases = new LifecyclePhases();
 * phases.add('release', { name: 'pool', run: () => pool.end() });
 * installPhases(app, phases);
 * ```
 */
export class LifecyclePhases {
  readonly #steps: Record<JoinablePhase, PhaseStep[]> = {
    ready: [],
    unready: [],
    flush: [],
    release: [],
  };
  readonly #running = new Set<PhaseStep>();
  #unready = false;

  /** Adds a step to a phase; steps added after their phase has run are not run. */
  add(phase: JoinablePhase, step: PhaseStep): void {
    if (!JOINABLE.includes(phase))
      throw new TypeError(
        `Unknown phase ${JSON.stringify(phase)}: steps join one of ${JOINABLE.join(', ')}.`,
      );
    this.#steps[phase].push(step);
  }

  /** `ready`: each step in turn, in the order added; the first failure stops the rest and is thrown. */
  async ready(): Promise<void> {
    for (const step of this.#steps.ready) await step.run();
  }

  /** `unready`, once (the shutdown's start and Fastify's preClose both ask for it). */
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
   * `flush`, then `release`. Every step runs even when one before it failed; the first failure is
   * thrown at the end (each is logged).
   */
  async close(log: FastifyInstance['log']): Promise<void> {
    const errors: unknown[] = [];
    const attempt = async (step: PhaseStep): Promise<void> => {
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
    const lost = [...this.#running]
      .map((step) => step.abandon?.(boundMs))
      .filter((e): e is Error => e !== undefined);
    return lost.length <= 1
      ? lost[0]
      : new AggregateError(lost, lost.map((e) => e.message).join(' '));
  }
}

function failed(log: FastifyInstance['log'], step: PhaseStep, err: unknown): void {
  try {
    log.error(
      { err: redactError(err), step: step.name },
      `Kit: shutdown step '${step.name}' failed`,
    );
  } catch {
    // a broken logger must not keep the other steps from running
  }
}

/**
 * Ties `phases` to `app`, in the only three Fastify lifecycle hooks Kit adds: `ready` in one
 * onReady hook, `unready` in preClose (when the shutdown did not begin with `app.kit.shutdown()`
 * or a signal), `flush` and `release` in one onClose hook.
 *
 * @example
 * ```ts
 * installPhases(app, kit.phases);   // in addKit, before any capability adds its steps
 * ```
 */
export function installPhases(app: FastifyInstance, phases: LifecyclePhases): void {
  app.addHook('onReady', () => phases.ready());
  app.addHook('preClose', (done) => {
    phases.unready(app.log);
    done();
  });
  app.addHook('onClose', () => phases.close(app.log));
}
