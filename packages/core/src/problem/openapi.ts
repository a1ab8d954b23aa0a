// How problem-details answers appear in the OpenAPI document: one named schema, two named
// responses (4XX, 5XX) referenced by every operation whose errors Kit answers, and a marker that
// carries "this route answers problems" from Fastify's route to swagger's operation.

/** Name of the problem-details schema under `components.schemas`. */
const PROBLEM_SCHEMA = 'ProblemDetails';
/** The operation extension Kit's swagger `transform` sets on routes that answer problems; removed from the document. */
export const PROBLEM_MARK = 'x-kit-problem-details';

const MEDIA_TYPE = 'application/problem+json';
const ref = { $ref: `#/components/schemas/${PROBLEM_SCHEMA}` };

/**
 * The JSON schema of a problem-details body as Kit writes it, for a host's own route schemas.
 *
 * @example
 * ```ts
 * app.get('/legacy', { schema: { response: { 410: PROBLEM_DETAILS_SCHEMA } } }, (request, reply) =>
 *   sendProblem(reply, { type: 'about:blank', title: 'Gone', status: 410, detail: 'Use /v2.' }));
 * ```
 */
export const PROBLEM_DETAILS_SCHEMA = Object.freeze({
  type: 'object',
  description: 'An RFC 9457 problem-details body.',
  required: ['type', 'title', 'status'],
  properties: {
    type: {
      type: 'string',
      description: 'A URI identifying the problem type; `about:blank` when the status says it all.',
    },
    title: { type: 'string', description: 'The HTTP status phrase.' },
    status: { type: 'integer', description: 'The HTTP status code.' },
    detail: {
      type: 'string',
      description: 'What went wrong, for a person; 5xx answers never carry internals.',
    },
    code: {
      type: 'string',
      description:
        'A stable error code, when the error has one (for example `FST_ERR_VALIDATION`).',
    },
    correlationId: {
      type: 'string',
      description:
        "The request's correlation id, as in the correlation header (X-Correlation-Id by default); absent only on a path the audit trail excludes.",
    },
    errors: {
      type: 'array',
      description: 'For a 400 validation failure: each input that failed.',
      items: {
        type: 'object',
        required: ['in', 'pointer', 'detail'],
        properties: {
          in: { type: 'string', enum: ['body', 'querystring', 'params', 'headers'] },
          name: { type: 'string', description: 'The parameter, outside the body.' },
          pointer: { type: 'string', description: 'A JSON pointer into that part of the request.' },
          detail: { type: 'string' },
        },
      },
    },
  },
});

const RESPONSES = {
  ClientError: {
    description: 'The request was refused (validation, unknown resource, rate limit, ...).',
    content: { [MEDIA_TYPE]: { schema: ref } },
  },
  ServerError: {
    description: 'The server failed; the body says no more than that, with the correlation id.',
    content: { [MEDIA_TYPE]: { schema: ref } },
  },
} as const;

/** The 401 Kit documents on operations that require credentials. */
export function unauthorizedResponse(bearer: boolean): Record<string, unknown> {
  return {
    description: bearer
      ? 'The bearer token is missing or not valid.'
      : 'The credentials are missing or not valid.',
    ...(bearer
      ? {
          headers: {
            'WWW-Authenticate': {
              description: 'The Bearer challenge (RFC 6750).',
              schema: { type: 'string' },
            },
          },
        }
      : {}),
    content: { [MEDIA_TYPE]: { schema: ref } },
  };
}

type Components = {
  schemas?: Record<string, unknown>;
  responses?: Record<string, unknown>;
} & Record<string, unknown>;

/** Adds `4XX` and `5XX` (named responses) to an operation that has none of its own. */
export function addProblemResponses(responses: Record<string, unknown>): Record<string, unknown> {
  const out = { ...responses };
  out['4XX'] ??= { $ref: '#/components/responses/ClientError' };
  out['5XX'] ??= { $ref: '#/components/responses/ServerError' };
  return out;
}

/** Declares the schema (and, when `withResponses`, the two responses) unless the host named its own the same. */
export function declareProblemComponents(
  components: Components,
  withResponses: boolean,
): Components {
  const schemas = { ...components.schemas };
  schemas[PROBLEM_SCHEMA] ??= PROBLEM_DETAILS_SCHEMA;
  const out: Components = { ...components, schemas };
  if (withResponses) out.responses = { ...RESPONSES, ...components.responses };
  return out;
}

const problemRoutes = new WeakSet<object>();

/** Records that a route's errors are answered with problem details (an `onRoute` hook of Kit's scope). */
export function markProblemRoute(route: object): void {
  problemRoutes.add(route);
}

/** Whether `markProblemRoute` recorded this route. */
export function answersProblems(route: object): boolean {
  return problemRoutes.has(route);
}
