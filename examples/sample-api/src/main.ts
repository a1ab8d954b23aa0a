import { useKit } from '@kit/core';
import type { KitAutoCrud } from '@kit/autocrud';
import { createApp, settingsFromEnv } from './app.js';

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? '127.0.0.1';

const app = createApp(settingsFromEnv());
// Listen before start-up completes: /healthz answers 503 `startup` until useKit resolves, so an
// orchestrator can watch the gate; /livez answers 200 throughout.
const ready = useKit(app);
await app.listen({ port, host });

const base = `http://${host === '0.0.0.0' ? 'localhost' : host}:${(app.server.address() as { port: number }).port}`;
console.log(`
Sample shop API is listening on ${base}
  API           ${base}/api/users   ${base}/api/orders@2   ${base}/api/admin/jobs (x-admin-key)
  Products      ${app.kit.services.hasRegistration('kitAutoCrud') ? `${base}/api/products (database: ${app.kit.services.resolve<KitAutoCrud>('kitAutoCrud').url})` : 'off: set DATABASE_URL'}
  OpenAPI       ${base}/openapi.json
  Reference UI  ${base}/docs
  Health        ${base}/healthz   ${base}/livez
  Account       ${app.kit.options.jwt ? `${base}/api/account/me (Authorization: Bearer <token>)` : 'off: set JWT_AUTHORITY and JWT_AUDIENCE (try npm run dev-authority -w examples/sample-api)'}
`);

await ready;
app.log.info('Kit start-up complete: /healthz reports the checks');
