import type { FastifyReply } from 'fastify';
import { answeredCorrelationId } from '../audit/request-correlation.js';

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
 * `Retry-After`) are sent with it; problem answers are never cached. When `problem` carries no
 * `correlationId`, the request's correlation id is added as that member (and as the correlation
 * header), whether or not the audit trail is on; only a path the audit trail excludes has none.
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
  const correlationId =
    problem.correlationId === undefined ? answeredCorrelationId(reply) : undefined;
  const body = correlationId === undefined ? problem : { ...problem, correlationId };
  return reply
    .code(problem.status)
    .headers({ ...headers, 'content-type': PROBLEM_JSON, 'cache-control': 'no-store' })
    .send(JSON.stringify(body));
}
