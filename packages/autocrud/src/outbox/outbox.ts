// The outbox of one AutoCrud database: its layer on the read/write seam, the subscribers
// `kitAutoCrud.onChange` registers, the dispatcher, and the health check that shows its state.
import { HealthCheckResult, KitError, type IHealthCheck } from '@kit/core';
import type { Entity } from '../entity.js';
import type { SeamLayer } from '../mapper/seam/hooks.js';
import type { SqlDialect } from '../mapper/sql/dialect.js';
import { outboxLayer } from '../mapper/outbox/outbox-sink.js';
import type { Runner } from '../mapper/seam/table.js';
import { OutboxDispatcher, type DispatcherLog } from './dispatcher.js';
import type { ResolvedOutbox } from './options.js';
import type { ChangeHandler, OutboxStats, OutboxTarget } from './types.js';

export class Outbox {
  /** The outbox's layer on the seam: the database attaches it to every entity (see `Database.use`). */
  readonly layer: SeamLayer = outboxLayer();
  readonly dispatcher: OutboxDispatcher;
  readonly #subscribers: OutboxTarget[] = [];
  readonly #names = new Set<string>();

  constructor(
    run: Runner,
    dialect: SqlDialect,
    private readonly settings: ResolvedOutbox,
    log: DispatcherLog,
  ) {
    for (const target of settings.targets) this.#names.add(target.name);
    this.dispatcher = new OutboxDispatcher(run, dialect, () => this.#targets, settings, log);
  }

  #targets: readonly OutboxTarget[] = [];
  /** Registers an in-process subscriber of `entity`'s changes. */
  onChange(entity: Entity, handler: ChangeHandler, name: string | undefined): void {
    if (typeof handler !== 'function')
      throw new KitError(
        'KIT_ERR_INVALID_ARGUMENT',
        `onChange(${entity.name}, handler): handler must be a function.`,
      );
    const own =
      name ??
      `onChange:${entity.name}:${this.#subscribers.filter((s) => s.entities?.[0] === entity.name).length + 1}`;
    if (own === '' || own.includes('\n') || this.#names.has(own)) {
      throw new KitError(
        'KIT_ERR_INVALID_ARGUMENT',
        `onChange(${entity.name}, handler, { name: ${JSON.stringify(own)} }): the name must be one line, not empty, and not used by another subscriber or target.`,
      );
    }
    this.#names.add(own);
    this.#subscribers.push({
      name: own,
      entities: [entity.name],
      deliver: async (message, signal) => handler(message, signal),
    });
    this.#targets = [...this.#subscribers, ...this.settings.targets];
  }

  /** Starts dispatching (when this instance dispatches at all). */
  start(): void {
    this.#targets = [...this.#subscribers, ...this.settings.targets];
    if (this.settings.dispatch) this.dispatcher.start();
  }

  stats(): OutboxStats {
    return this.dispatcher.stats();
  }
}

/**
 * The `outbox` check `addKitAutoCrud` adds with the outbox on: healthy with the dispatcher's
 * counters and the backlog in `data`, degraded while dead records wait for someone to look at them
 * (or when the backlog cannot be read: the `database` check says why).
 */
export class OutboxHealthCheck implements IHealthCheck {
  constructor(private readonly outbox: Outbox) {}

  async checkHealth(): Promise<HealthCheckResult> {
    try {
      const backlog = await this.outbox.dispatcher.backlog();
      const { leader, delivered, retries, deadLettered } = this.outbox.stats();
      const data = {
        leader,
        pending: backlog.pending,
        dead: backlog.dead,
        delivered,
        retries,
        deadLettered,
      };
      if (backlog.dead > 0)
        return HealthCheckResult.degraded(
          `${backlog.dead} dead outbox record(s): see kit_outbox_dead`,
          undefined,
          data,
        );
      return HealthCheckResult.healthy('Outbox delivering', data);
    } catch (err) {
      return HealthCheckResult.degraded(
        'Outbox backlog could not be read',
        err instanceof Error ? err : new Error(String(err)),
      );
    }
  }
}
