import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { asClass, asValue } from 'awilix';
import { addKit, useKit } from '@kit/core';
import { OrderRepository } from './services/orders.js';
import { UserRepository } from './services/users.js';

/** Settings of the sample, from the environment by default. */
export interface SampleSettings {
  adminApiKey: string;
  logger: FastifyServerOptions['logger'];
  /** Token authority for /api/account (JWT_AUTHORITY); JWT stays off when unset. */
  jwtAuthority?: string;
  /** Accepted audiences (JWT_AUDIENCE, comma-separated). */
  jwtAudiences?: string[];
}

export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): SampleSettings {
  return {
    adminApiKey: env.ADMIN_API_KEY ?? 'change-me',
    logger: env.LOG_LEVEL === 'silent' ? false : { level: env.LOG_LEVEL ?? 'info' },
    jwtAuthority: env.JWT_AUTHORITY || undefined,
    jwtAudiences: (env.JWT_AUDIENCE ?? '').split(',').map((a) => a.trim()).filter((a) => a !== ''),
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
    // Bearer tokens for /api/account, only when an authority is given: `npm start` needs no network.
    if (settings.jwtAuthority) opt.configureJwt(settings.jwtAuthority, settings.jwtAudiences ?? []);
    // One audit entry per request, with a correlation id, written in batches off the request path;
    // the sample's own admin key joins the redacted headers.
    opt.configureAuditTrail((a) => {
      a.asyncWrite = true;
      a.redactHeaders.push('X-Admin-Key');
    });
  });

  kit.services.register({
    userRepository: asClass(UserRepository).singleton(),
    orderRepository: asClass(OrderRepository).singleton(),
    adminApiKey: asValue(settings.adminApiKey),
  });

  await useKit(app);
  return app;
}
