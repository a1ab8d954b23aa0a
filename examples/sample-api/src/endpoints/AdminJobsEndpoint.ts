import type { FastifyInstance } from 'fastify';
import { EndpointGroup, type IKitEndpoint } from '@kit/core';

/** The second class of the "admin" group: shares /api/admin, the tag and the API-key hook. */
@EndpointGroup('admin')
export class AdminJobsEndpoint implements IKitEndpoint {
  addRoutes(app: FastifyInstance): void {
    app.get('jobs', { schema: { summary: 'Background jobs' } }, async () => [
      { name: 'nightly-report', schedule: '0 2 * * *' },
    ]);
  }
}
