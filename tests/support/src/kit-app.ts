// The one way a test builds a Kit app: addKit and useKit on a Fastify instance, in the order a
// host calls them. Suites that need the same settings on every app wrap it in a one-line preset
// (health tests turn the OpenAPI document off) instead of writing the wiring again.
import Fastify, { type FastifyInstance } from 'fastify';
import { addKit, useKit, type EndpointSource, type KitConfigure } from '@kit/core';

/** What `kitApp` does besides adding and using Kit. */
export interface KitAppOptions {
  /** The instance to add Kit to, for a test that needs server options or a logger of its own. Default `Fastify()`. */
  readonly app?: FastifyInstance;
  /** Routes of the host, added after `addKit` and before `useKit`, as a host adds its own. */
  readonly routes?: (app: FastifyInstance) => void;
  /**
   * Boot the app (`app.ready()`) before returning, so `inject` sees every route. Default true;
   * false leaves it open for a test that adds routes or checks after Kit, or listens itself.
   */
  readonly ready?: boolean;
}

/**
 * A Fastify instance with Kit added (with `sources` and `configure`) and used.
 *
 * @example
 * ```ts
 * const app = await kitApp([new URL('./fixtures/endpoints/', import.meta.url)], (opt) => {
 *   opt.apiPrefix = 'api';
 * });
 * const res = await app.inject('/api/user/profile');
 *
 * const health = await kitApp([], (opt) => opt.healthChecksConfigure = (hc) => hc.addCheck('db', check), { ready: false });
 * ```
 */
export async function kitApp(
  sources: readonly EndpointSource[] = [],
  configure?: KitConfigure,
  options: KitAppOptions = {},
): Promise<FastifyInstance> {
  const app = options.app ?? Fastify();
  addKit(app, sources, configure);
  options.routes?.(app);
  await useKit(app);
  if (options.ready ?? true) await app.ready();
  return app;
}
