import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { asClass, asValue } from 'awilix';
import { addKit, useKit } from '@kit/core';
import {
  addKitStore,
  redisStreamTarget,
  useKitStoreHealthCheck,
  type KitRedisStore,
} from '@kit/store-redis';
import { addKitAutoCrud } from '@kit/autocrud';
import { Product, ProductsEndpoint } from './catalog/ProductsEndpoint.js';
import { BooksEndpoint } from './catalog/BooksEndpoint.js';
import { SeedProducts } from './catalog/SeedProducts.js';
import { CustomersEndpoint } from './shop/CustomersEndpoint.js';
import { CustomerOrdersEndpoint } from './shop/CustomerOrdersEndpoint.js';
import { OrderLinesEndpoint } from './shop/OrderLinesEndpoint.js';
import { OrderRepository } from './services/orders.js';
import { UserRepository } from './services/users.js';
import { DiskSpaceHealthCheck } from './health/DiskSpaceHealthCheck.js';
import {
  EventLoopDelayHealthCheck,
  type HealthSettings,
} from './health/EventLoopDelayHealthCheck.js';

/** Settings of the sample, from the environment by default. */
export interface SampleSettings {
  adminApiKey: string;
  logger: FastifyServerOptions['logger'];
  /** Token authority for /api/account (JWT_AUTHORITY); JWT stays off when unset. */
  jwtAuthority?: string;
  /** Accepted audiences (JWT_AUDIENCE, comma-separated). */
  jwtAudiences?: string[];
  /** How long /healthz answers 503 before the server closes on SIGTERM/SIGINT (default 5000). */
  shutdownDelayMs?: number;
  /** Redis for the idempotency, rate-limit, saga and cron stores; Kit's in-memory stores when absent. */
  redisUrl?: string;
  /**
   * The database of /api/products (DATABASE_URL; `npm start` uses the embedded PGlite, `pglite:`,
   * when unset): `postgres://…`, `pglite:[dir]` or `sqlite:<file>`. Without it, no /api/products.
   */
  databaseUrl?: string;
  /** The key /api/products signs its list cursors with (CURSOR_SECRET, at least 32 characters): the same on every instance. */
  cursorSecret?: string;
}

export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): SampleSettings {
  return {
    adminApiKey: env.ADMIN_API_KEY ?? 'change-me',
    logger: env.LOG_LEVEL === 'silent' ? false : { level: env.LOG_LEVEL ?? 'info' },
    jwtAuthority: env.JWT_AUTHORITY || undefined,
    jwtAudiences: (env.JWT_AUDIENCE ?? '')
      .split(',')
      .map((a) => a.trim())
      .filter((a) => a !== ''),
    shutdownDelayMs:
      env.SHUTDOWN_DELAY_MS === undefined ? undefined : Number(env.SHUTDOWN_DELAY_MS),
    redisUrl: env.REDIS_URL || undefined,
    databaseUrl: env.DATABASE_URL || 'pglite:',
    cursorSecret: env.CURSOR_SECRET || undefined,
  };
}

/**
 * Creates the sample shop API with Kit added but not yet used: `main.ts` listens before `useKit`
 * settles, so probes see the start-up gate.
 */
export function createApp(settings: SampleSettings = settingsFromEnv()): FastifyInstance {
  const app = Fastify({ logger: settings.logger });

  // Orders and their lines are owned by their customer (authorization rules on a token claim): served only with a token authority.
  const shop = settings.jwtAuthority
    ? [CustomersEndpoint, CustomerOrdersEndpoint, OrderLinesEndpoint]
    : [CustomersEndpoint];
  const sources = [
    new URL('./endpoints/', import.meta.url),
    ...(settings.databaseUrl ? [ProductsEndpoint, BooksEndpoint, ...shop] : []),
  ];
  const kit = addKit(app, sources, (opt) => {
    opt.openApiInfo = {
      title: 'Sample shop API',
      description: 'Users, orders and admin jobs, grouped by Kit.',
    };
    // Bearer tokens for /api/account, only when an authority is given: `npm start` needs no network.
    if (settings.jwtAuthority) opt.configureJwt(settings.jwtAuthority, settings.jwtAudiences ?? []);
    // Health: two real checks built from the container, and a graceful SIGTERM/SIGINT.
    opt.healthChecksConfigure = (hc) =>
      hc
        .addCheck('eventLoop', EventLoopDelayHealthCheck)
        .addCheck('disk', DiskSpaceHealthCheck, { tags: ['ready'], timeoutMs: 2000 });
    opt.configureGracefulShutdown((g) => {
      g.shutdownDelayMs = settings.shutdownDelayMs ?? g.shutdownDelayMs;
    });
    // One audit entry per request, with a correlation id, written in batches off the request path;
    // the sample's own admin key joins the redacted headers.
    opt.configureAuditTrail((a) => {
      a.asyncWrite = true;
      a.redactHeaders.push('X-Admin-Key');
    });
    // Prometheus metrics at /metrics: requests per route (method, pattern, status class, duration),
    // the audit counters and the health checks.
    opt.configureMetrics();
    if (settings.databaseUrl) opt.configureWarmup(SeedProducts);
  });

  kit.services.register({
    userRepository: asClass(UserRepository).singleton(),
    orderRepository: asClass(OrderRepository).singleton(),
    adminApiKey: asValue(settings.adminApiKey),
    logger: asValue(app.log),
    healthSettings: asValue<HealthSettings>({
      eventLoopDelayDegradedMs: 200,
      diskPath: process.cwd(),
      diskDegradedBelowBytes: 1024 ** 3,
      diskUnhealthyBelowBytes: 100 * 1024 ** 2,
    }),
  });

  // Stores (used by /api/payments): Redis when REDIS_URL is set, shared by every instance and
  // surfaced in /healthz as the `redis` check; Kit's in-memory defaults otherwise.
  let store: KitRedisStore | undefined;
  if (settings.redisUrl) {
    store = addKitStore(app, settings.redisUrl, { keyPrefix: 'sample-api:' });
    useKitStoreHealthCheck(app);
  }

  // Products (/api/products): AutoCrud over DATABASE_URL, or PGlite in memory for `npm start`;
  // missing tables are created, and a warm-up fills an empty catalogue. Idempotent creates use the
  // same idempotencyStore as /api/payments (Redis with REDIS_URL). The outbox: every committed
  // write is also a record in the write's transaction, delivered by one instance at a time to the
  // subscriber below and, with REDIS_URL, to the Redis Stream `sample-api:{catalog-changes}`.
  if (settings.databaseUrl) {
    const crud = addKitAutoCrud(app, settings.databaseUrl, {
      createTables: true,
      outbox: { targets: store ? [redisStreamTarget(store, { stream: 'catalog-changes' })] : [] },
      ...(settings.cursorSecret ? { cursorSecret: settings.cursorSecret } : {}),
    });
    crud.onChange(
      Product,
      (change) =>
        app.log.info(
          {
            change: {
              id: change.id,
              key: change.key,
              operation: change.operation,
              changed: change.changed,
              correlationId: change.correlationId,
            },
          },
          'product changed',
        ),
      { name: 'log-product-changes' },
    );
  }

  return app;
}

/** The sample, ready for inject() or listen(): tests use this. */
export async function buildApp(
  settings: SampleSettings = settingsFromEnv(),
): Promise<FastifyInstance> {
  const app = createApp(settings);
  await useKit(app);
  return app;
}
