import type { FastifyReply } from 'fastify';
import { getCorrelationId } from '../audit/correlation.js';

/**
 * An RFC 9457 problem-details body. `type` is `about:blank` unless a problem type URI is known;
 * further members (for example `correlationId`, `errors`) may be added.
 *
 * @example
 * ```ts
 * const problem: ProblemDetails = { type: 'about:blank', title: 'Not Found', status: 404, detail: 'No product 7.' };
 * ```
 */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  [member: string]: unknown;
}

/** The media type of a problem-details body. */
const PROBLEM_JSON = 'application/problem+json; charset=utf-8';

/**
 * Answers `reply` with a problem-details body, serialized here so that a route's own `response`
 * schema for that status cannot reshape it. Extra headers (for example `WWW-Authenticate`,
 * `Retry-After`) are sent with it; problem answers are never cached. When the audit trail gave the
 * request a correlation id and `problem` carries none, it is added as the `correlationId` member.
 *
 * @param headers Extra response headers, such as `retry-after`.
 * @example
 * ```ts
 * app.get('{id}', async (request, reply) => {
 *   const row = await find(request.params.id);
 *   if (!row) return sendProblem(reply, { type: 'about:blank', title: 'Not Found', status: 404, detail: 'No such product.' });
 *   return row;
 * });
 * ```
 */
export function sendProblem(
  reply: FastifyReply,
  problem: ProblemDetails,
  headers?: Record<string, string>,
): FastifyReply {
  const correlationId = problem.correlationId === undefined ? correlationIdOf(reply) : undefined;
  const body = correlationId === undefined ? problem : { ...problem, correlationId };
  return reply
    .code(problem.status)
    .headers({ ...headers, 'content-type': PROBLEM_JSON, 'cache-control': 'no-store' })
    .send(JSON.stringify(body));
}

/**
 * The correlation id the audit trail gave this request: its async context, or, when the host
 * turned that off (`correlationIdContext = false`), the correlation header it set on the reply.
 * `undefined` when the audit trail is off or the path is excluded.
 */
export function correlationIdOf(reply: FastifyReply): string | undefined {
  const fromContext = getCorrelationId();
  if (fromContext !== undefined) return fromContext;
  // Read structurally: importing the Kit runtime's types here would make the modules a circle.
  const header = (
    reply.server as { kit?: { options?: { auditTrail?: { correlationIdHeader?: string } } } }
  ).kit?.options?.auditTrail?.correlationIdHeader;
  const value = header === undefined ? undefined : reply.getHeader(header.toLowerCase());
  return typeof value === 'string' ? value : undefined;
}
