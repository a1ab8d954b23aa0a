import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { coreErrors } from '../shared/errors.js';
import { answeredCorrelationId } from '../audit/request-correlation.js';
import { sendProblem, type ProblemDetails } from './details.js';
import { redactError } from '../shared/secrets.js';

/** What a 5xx problem says instead of the error's message: internals never reach the client. */
const SERVER_ERROR_DETAIL = 'The server could not complete the request.';

/**
 * One input that failed validation, as listed in the `errors` member of a 400 problem: where
 * (`in`: `body`, `querystring`, `params` or `headers`), the parameter's `name` outside the body,
 * a JSON pointer into that part, and what is wrong.
 *
 * @example
 * ```ts
 * const error: ProblemValidationError = { in: 'querystring', name: 'limit', pointer: '#/limit', detail: 'must be integer' };
 * ```
 */
export interface ProblemValidationError {
  in: string;
  name?: string;
  pointer: string;
  detail: string;
}

type ErrorLike = Partial<FastifyError> & {
  status?: unknown;
  headers?: Record<string, string>;
  validation?: unknown;
  validationContext?: unknown;
};

function statusOf(error: ErrorLike, reply: FastifyReply): number {
  // The same precedence as Fastify's own handler: statusCode, then status, then a code set on the reply.
  for (const candidate of [error.statusCode, error.status, reply.statusCode]) {
    if (
      typeof candidate === 'number' &&
      Number.isInteger(candidate) &&
      candidate >= 400 &&
      candidate <= 599
    )
      return candidate;
  }
  return 500;
}

function escapePointer(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** Ajv's errors (and any validator's that follow its shape) as problem `errors` entries. */
function validationErrors(items: unknown, part: string): ProblemValidationError[] {
  if (!Array.isArray(items)) return [];
  return items.map(
    (item: {
      instancePath?: unknown;
      params?: { missingProperty?: unknown };
      message?: unknown;
    }) => {
      const missing =
        typeof item?.params?.missingProperty === 'string'
          ? `/${escapePointer(item.params.missingProperty)}`
          : '';
      const path = `${typeof item?.instancePath === 'string' ? item.instancePath : ''}${missing}`;
      const first = path.split('/')[1];
      const entry: ProblemValidationError = {
        in: part,
        pointer: `#${path}`,
        detail: typeof item?.message === 'string' ? item.message : 'is not valid',
      };
      if (part !== 'body' && first) entry.name = first.replaceAll('~1', '/').replaceAll('~0', '~');
      return entry;
    },
  );
}

/**
 * The problem-details body for an error a route or hook threw (or sent): 4xx keep their message
 * as `detail` and their `code`; a validation failure lists each input in `errors`; 5xx say only
 * {@link SERVER_ERROR_DETAIL}, never the message, a stack or a cause.
 */
function problemFromError(error: unknown, reply: FastifyReply): ProblemDetails {
  const e = (typeof error === 'object' && error !== null ? error : {}) as ErrorLike;
  const status = statusOf(e, reply);
  const problem: ProblemDetails = {
    type: 'about:blank',
    title: STATUS_CODES[status] ?? 'Error',
    status,
  };
  if (status >= 500) {
    problem.detail = SERVER_ERROR_DETAIL;
    return problem;
  }
  if (typeof e.message === 'string' && e.message !== '') problem.detail = e.message;
  if (typeof e.code === 'string' && e.code !== '') problem.code = e.code;
  if (e.validation !== undefined)
    problem.errors = validationErrors(
      e.validation,
      typeof e.validationContext === 'string' ? e.validationContext : 'body',
    );
  return problem;
}

/** Logs as Fastify's default handler does (5xx at error with the request, 4xx at info), then answers a problem. */
function kitProblemErrorHandler(
  error: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  const problem = problemFromError(error, reply);
  // The request's correlation id first (sendProblem reads it again): made now when the audit
  // trail is off, it binds itself to the request's logger, so the line below carries the id the
  // answer shows.
  answeredCorrelationId(reply);
  const err = error instanceof Error ? error : new Error(String(error));
  // Kit's own line: credentials in a driver's message or stack are masked like in the health report.
  const logged = redactError(err);
  if (problem.status >= 500)
    request.log.error({ req: request, res: reply, err: logged }, logged.message);
  else request.log.info({ res: reply, err: logged }, logged.message);
  const headers = (error as ErrorLike | null)?.headers;
  return sendProblem(
    reply,
    problem,
    typeof headers === 'object' && headers !== null ? headers : undefined,
  );
}

function kitProblemNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  // The path without the query: a query string may carry a secret the audit trail would redact.
  const url = request.raw.url ?? '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  return sendProblem(reply, {
    type: 'about:blank',
    title: 'Not Found',
    status: 404,
    detail: `No route matches ${request.method} ${path}.`,
  });
}

/**
 * `opt.problemDetails`: in `scope` (the plugin holding every endpoint group), errors thrown or
 * sent by routes and hooks answer RFC 9457 problem details; the instance's 404 handler, set from
 * `scope` so that errors of hooks running for it get the same shape, answers one too. A group may
 * still set its own error handler inside `addRoutes`.
 */
export function installProblemDetails(scope: FastifyInstance): void {
  scope.setErrorHandler(kitProblemErrorHandler);
  try {
    scope.setNotFoundHandler(kitProblemNotFound);
  } catch (err) {
    throw coreErrors.error('KIT_ERR_NOT_FOUND_HANDLER', undefined, { cause: err });
  }
}
