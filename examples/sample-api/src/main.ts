import type { FastifyServerOptions } from 'fastify';
import { useKit } from '@kit/core';
import type { KitAutoCrud } from '@kit/autocrud';
import { createApp, settingsFromEnv } from './app.js';

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? '127.0.0.1';

const settings = settingsFromEnv();

// A person at a terminal outside production reads pino-pretty's coloured lines; anything else
// (a pipe, a log shipper, CI, production) gets pino's JSON lines, one object per line.
function loggerFor(logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  const readable = process.stdout.isTTY === true && process.env.NODE_ENV !== 'production';
  if (!readable || typeof logger !== 'object' || logger === null) return logger;
  return {
    ...logger,
    transport: {
      target: 'pino-pretty',
      options: { translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname' },
    },
  };
}

const app = createApp({ ...settings, logger: loggerFor(settings.logger) });
// Listen before start-up completes: /healthz answers 503 `startup` until useKit resolves, so an
// orchestrator can watch the gate; /livez answers 200 throughout.
const ready = useKit(app);
await app.listen({ port, host });

const base = `http://${host === '0.0.0.0' ? 'localhost' : host}:${(app.server.address() as { port: number }).port}`;
app.log.info(
  {
    api: `${base}/api/users   ${base}/api/orders@2   ${base}/api/admin/jobs (x-admin-key)`,
    openApi: `${base}/openapi.json`,
    products: app.kit.services.hasRegistration('kitAutoCrud')
      ? `${base}/api/products (database: ${app.kit.services.resolve<KitAutoCrud>('kitAutoCrud').url})`
      : 'off: set DATABASE_URL',
    referenceUi: `${base}/docs`,
    health: `${base}/healthz   ${base}/livez`,
    account: app.kit.options.jwt
      ? `${base}/api/account/me (Authorization: Bearer <token>)`
      : 'off: set JWT_AUTHORITY and JWT_AUDIENCE (try npm run dev-authority -w examples/sample-api)',
  },
  `Sample shop API is listening on ${base}`,
);

await ready;
app.log.info('Kit start-up complete: /healthz reports the checks');
