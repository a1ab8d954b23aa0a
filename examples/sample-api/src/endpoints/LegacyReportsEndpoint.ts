import type { FastifyRequest } from 'fastify';
import { KitEndpoint, KitHttpMethod, KitMethod } from '@kit/core';

/**
 * An old-style endpoint kept for an old client: /api/legacyReports/daily/{day}.
 * @deprecated use an IKitEndpoint class; @KitEndpoint is removed in 0.5.0.
 */
@KitEndpoint()
export class LegacyReportsEndpoint {
  @KitMethod('daily/{day}', KitHttpMethod.GET)
  daily(request: FastifyRequest<{ Params: { day: string } }>) {
    return { day: request.params.day, orders: 2, revenueCents: 5700 };
  }
}
