import { createHash, randomUUID } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import {
  kitRateLimitStore,
  sendProblem,
  type IIdempotencyStore,
  type IKitEndpoint,
} from '@kit/core';

/** A captured payment (a type alias, so it is a JSON value the stores accept). */
type Payment = {
  id: string;
  orderId: string;
  amountCents: number;
  status: 'captured';
  createdAt: string;
};

const payment = {
  type: 'object',
  required: ['id', 'orderId', 'amountCents', 'status', 'createdAt'],
  properties: {
    id: { type: 'string' },
    orderId: { type: 'string' },
    amountCents: { type: 'integer' },
    status: { type: 'string' },
    createdAt: { type: 'string' },
  },
} as const;

/** Payments a client may create at most per minute (per client IP). */
const PAYMENTS_PER_MINUTE = 20;

/**
 * /api/payments: shows the stores. `POST` is rate-limited per client IP by @fastify/rate-limit
 * counting in Kit's `rateLimitStore` (its headers and 429, Kit's atomic store), and idempotent on
 * the `Idempotency-Key` header: a retry with the same key and body replays the first response
 * (`Idempotent-Replayed: true`) instead of charging twice. With `REDIS_URL` set, both hold across
 * every instance of the service; otherwise Kit's in-memory stores hold within this process.
 */
export class PaymentsEndpoint implements IKitEndpoint {
  constructor(private readonly deps: { idempotencyStore: IIdempotencyStore }) {}

  async addRoutes(app: FastifyInstance): Promise<void> {
    // Registered in the group (awaited, so its route hook sees the routes below); only routes with
    // config.rateLimit are limited.
    await app.register(rateLimit, {
      global: false,
      enableDraftSpec: true,
      store: kitRateLimitStore(app),
    });

    app.post<{
      Body: { orderId: string; amountCents: number };
      Headers: { 'idempotency-key': string };
    }>(
      '',
      {
        schema: {
          summary: 'Capture a payment (idempotent, rate-limited)',
          headers: {
            type: 'object',
            required: ['idempotency-key'],
            properties: { 'idempotency-key': { type: 'string', minLength: 1, maxLength: 200 } },
          },
          body: {
            type: 'object',
            required: ['orderId', 'amountCents'],
            properties: {
              orderId: { type: 'string', minLength: 1 },
              amountCents: { type: 'integer', minimum: 1 },
            },
          },
          response: { 201: payment },
        },
        config: { rateLimit: { max: PAYMENTS_PER_MINUTE, timeWindow: 60_000 } },
      },
      async (request, reply) => {
        const key = `payments:${request.headers['idempotency-key']}`;
        const fingerprint = createHash('sha256').update(JSON.stringify(request.body)).digest('hex');
        const reservation = await this.deps.idempotencyStore.reserve(key, {
          ttlMs: 30_000,
          fingerprint,
        });
        switch (reservation.outcome) {
          case 'completed':
            return reply.code(201).header('idempotent-replayed', 'true').send(reservation.response);
          case 'pending':
            return sendProblem(
              reply,
              {
                type: 'about:blank',
                title: 'Conflict',
                status: 409,
                detail: 'A request with this Idempotency-Key is in progress.',
              },
              { 'retry-after': String(Math.ceil(reservation.retryAfterMs / 1000)) },
            );
          case 'mismatch':
            return sendProblem(reply, {
              type: 'about:blank',
              title: 'Unprocessable Content',
              status: 422,
              detail: 'This Idempotency-Key was used for a different request.',
            });
        }

        try {
          const created: Payment = {
            id: randomUUID(),
            orderId: request.body.orderId,
            amountCents: request.body.amountCents,
            status: 'captured',
            createdAt: new Date().toISOString(),
          };
          await this.deps.idempotencyStore.complete(key, reservation.token, created, {
            ttlMs: 24 * 60 * 60 * 1000,
          });
          return reply.code(201).header('idempotent-replayed', 'false').send(created);
        } catch (err) {
          // Nothing was captured: free the key so the client's retry runs again.
          await this.deps.idempotencyStore.release(key, reservation.token).catch(() => undefined);
          throw err;
        }
      },
    );
  }
}
