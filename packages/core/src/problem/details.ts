import type { FastifyReply } from 'fastify';

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
export const PROBLEM_JSON = 'application/problem+json; charset=utf-8';

/**
 * Answers `reply` with a problem-details body, serialized here so that a route's own `response`
 * schema for that status cannot reshape it. Extra headers (for example `WWW-Authenticate`,
 * `Retry-After`) are sent with it; problem answers are never cached.
 *
 * @example
 * ```ts
 * app.get('{id}', async (request, reply) => {
 *   const row = await find(request.params.id);
 *   if (!row) return sendProblem(reply, { type: 'about:blank', title: 'Not Found', status: 404, detail: 'No such product.' });
 *   return row;
 * });
 * ```
 */
export function sendProblem(reply: FastifyReply, problem: ProblemDetails, headers?: Record<string, string>): FastifyReply {
  return reply
    .code(problem.status)
    .headers({ ...headers, 'content-type': PROBLEM_JSON, 'cache-control': 'no-store' })
    .send(JSON.stringify(problem));
}
