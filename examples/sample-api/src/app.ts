import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { asClass, asValue } from 'awilix';
import { addKit, useKit } from '@kit/core';
import { addKitStore, useKitStoreHealthCheck } from '@kit/store-redis';
import { OrderRepository } from './services/orders.js';
import { UserRepository } from './services/users.js';

/** Settings of the sample, from the environment by default. */
export interface SampleSettings {
  adminApiKey: string;
  logger: FastifyServerOptions['logger'];
  /** Redis for the idempotency, rate-limit, saga and cron stores; Kit's in-memory stores when absent. */
  redisUrl?: string;
}

export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): SampleSettings {
  return {
    adminApiKey: env.ADMIN_API_KEY ?? 'change-me',
    logger: env.LOG_LEVEL === 'silent' ? false : { level: env.LOG_LEVEL ?? 'info' },
    redisUrl: env.REDIS_URL || undefined,
  };
}

/**
 * Builds the sample shop API. `listen` is left to the caller so that tests can use the same
 * application over inject or a real socket.
 */
export async function buildApp(settings: SampleSettings = settingsFromEnv()): Promise<FastifyInstance> {
  const app = Fastify({ logger: settings.logger });

  const kit = addKit(app, [new URL('./endpoints/', import.meta.url)], (opt) => {
    opt.openApiInfo = { title: 'Sample shop API', description: 'Users, orders and admin jobs, grouped by Kit.' };
  });

  kit.services.register({
    userRepository: asClass(UserRepository).singleton(),
    orderRepository: asClass(OrderRepository).singleton(),
    adminApiKey: asValue(settings.adminApiKey),
  });

  // Stores (used by /api/payments): Redis when REDIS_URL is set, shared by every instance and
  // surfaced in /healthz as the `redis` check; Kit's in-memory defaults otherwise.
  if (settings.redisUrl) {
    addKitStore(app, settings.redisUrl, { keyPrefix: 'sample-api:' });
    useKitStoreHealthCheck(app);
  }

  await useKit(app);
  return app;
}
