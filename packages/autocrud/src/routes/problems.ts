// Every answer of a generated route that is not a success is a problem-details body. This file
// renders them: the 400 naming a parameter at fault (validation-faults.ts names it), the shape an
// error says it answers with (each of the mapper's errors carries its status and problem texts from
// the catalogue, ../errors.ts), and Fastify's own client errors. Nothing the database said (SQL,
// constraint names, hosts) reaches the client.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { sendProblem, type ProblemDetails } from '@kit/core';
import type { Entity } from '../entity.js';
import { routeProblems } from '../errors.js';
import {
  AnswerableError,
  isAnswerable,
  parameterText,
  problemText,
  type ProblemShape,
  type ProblemSubject,
} from '../answers.js';
import { InvalidParameterError, NotFoundError, PreconditionRequiredError } from './route-errors.js';
import type { FilterParameter } from './schemas.js';
import { describeValidation, type AjvError, type InvalidParameter } from './validation-faults.js';

export type { InvalidParameter, ParameterLocation } from './validation-faults.js';
export { BATCH_RELATION, BATCH_ROW, rowPath, sortDetail } from './validation-faults.js';

/** A key a body parser refused (`__proto__`), answered 400 by the routes' error handler. */
export class BodyKeyError extends AnswerableError<'KIT_ERR_AUTOCRUD_INVALID_PARAMETER'> {
  /** The status Fastify reads of an error a body parser hands it: the error's own. */
  readonly statusCode: number;

  constructor(readonly key: string) {
    super('KIT_ERR_AUTOCRUD_INVALID_PARAMETER', `The body holds the key ${key}`);
    this.statusCode = this.httpStatus;
  }

  /** The 400 of a body field that is none of the entity's. */
  problem(subject: ProblemSubject): ProblemShape {
    return new InvalidParameterError({
      in: 'body',
      name: this.key,
      detail: parameterText('notAField', { entity: subject.name }),
    }).problem();
  }
}

/** The JSON Pointer of a body parameter as Kit names it: `price`, a row `[3].price`, a child `lines[3].quantity`. */
export function pointerTo(name: string): string {
  // A row of an array body (`[3].price`), or of a relation (`lines[3].price`): through the index.
  const row = /^([A-Za-z_][A-Za-z0-9_]*)?\[(\d+)\](?:\.(.*))?$/.exec(name);
  if (row) {
    const head = row[1] === undefined ? `#/${row[2] as string}` : `#/${row[1]}/${row[2] as string}`;
    return row[3] === undefined ? head : `${head}${pointerTo(row[3]).slice(1)}`;
  }
  return name === '' ? '#' : `#/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`;
}

const TITLES: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  428: 'Precondition Required',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** A problem-details body; `title` from the status. */
export function problem(
  status: number,
  detail: string,
  extra?: Record<string, unknown>,
): ProblemDetails {
  return { type: 'about:blank', title: TITLES[status] ?? 'Error', status, detail, ...extra };
}

/**
 * Answers a problem shape: its status, problem-details body (each parameter at fault in `errors`
 * with its JSON pointer, then the shape's own members) and headers; no body when it has no detail.
 */
export function sendShape(reply: FastifyReply, shape: ProblemShape): FastifyReply {
  if (shape.detail === undefined) return reply.code(shape.status).send();
  const errors = shape.errors?.map((f) => ({
    in: f.in ?? 'body',
    name: f.name,
    pointer: pointerTo(f.name) + (f.path ?? ''),
    detail: f.detail,
  }));
  return sendProblem(
    reply,
    problem(shape.status, shape.detail, { ...(errors ? { errors } : {}), ...shape.members }),
    shape.headers ? { ...shape.headers } : undefined,
  );
}

/**
 * Answers an error of the routes' own (route-errors.ts) as it says it answers: its status,
 * problem details and headers. Nothing else in the routes states a status.
 *
 * @example
 * ```ts
 * if (!row) return answer(reply, new NotFoundError(entity.name, entity.primaryKey, key));
 * ```
 */
export function answer(reply: FastifyReply, error: { problem(): ProblemShape }): FastifyReply {
  return sendShape(reply, error.problem());
}

/** Answers 400 naming the parameter. */
export function badRequest(reply: FastifyReply, fault: InvalidParameter): FastifyReply {
  return answer(reply, new InvalidParameterError(fault));
}

/** Answers 428: the write needs `If-Match`. */
export function preconditionRequired(reply: FastifyReply, entity: Entity): FastifyReply {
  return answer(reply, new PreconditionRequiredError(entity.name));
}

/** Answers 404 for a primary key with no (visible) row. */
export function notFound(reply: FastifyReply, entity: Entity, key: unknown): FastifyReply {
  return answer(reply, new NotFoundError(entity.name, entity.primaryKey, key));
}

/** What Fastify's own client errors (an unparsable, too large or wrongly typed body) say. */
const CLIENT_ERRORS: Readonly<Record<number, string>> = {
  415: problemText('KIT_ERR_AUTOCRUD_NOT_JSON', 'notJson'),
  413: routeProblems.bodyTooLarge,
  400: routeProblems.bodyInvalidJson,
};

/**
 * The `errorHandler` of every generated route: a validation error is a 400 (or the 428 of a
 * missing required If-Match) naming the parameter; an error that says how it answers
 * ({@link Answerable}: the mapper's, a client gone, a refused body key) is answered so; Fastify's
 * client errors keep their status; anything else is a logged 500 that says nothing more.
 */
export function crudErrorHandler(
  entity: Entity,
  filters: ReadonlyMap<string, FilterParameter>,
  hiddenOf?: (request: FastifyRequest) => ReadonlySet<string> | undefined,
) {
  return function autoCrudErrors(
    error: FastifyError,
    request: FastifyRequest,
    reply: FastifyReply,
  ): FastifyReply {
    if (error.validation) {
      const [first] = error.validation as unknown as AjvError[];
      // A required If-Match (requireIfMatch) is declared in the schema, for the document; missing, it is a 428.
      if (
        error.validationContext === 'headers' &&
        first?.keyword === 'required' &&
        first.params.missingProperty === 'if-match'
      )
        return preconditionRequired(reply, entity);
      return badRequest(
        reply,
        describeValidation(
          entity,
          filters,
          error,
          hiddenOf?.(request),
          request.query as Readonly<Record<string, unknown>> | undefined,
        ),
      );
    }
    if (isAnswerable(error)) {
      const shape = error.problem(entity);
      if (shape.log?.level === 'error') request.log.error({ err: error }, shape.log.message);
      else if (shape.log) request.log.debug(shape.log.message);
      return sendShape(reply, shape);
    }
    const status = typeof error.statusCode === 'number' ? error.statusCode : 500;
    if (status >= 400 && status < 500)
      return sendProblem(
        reply,
        problem(status, CLIENT_ERRORS[status] ?? routeProblems.clientError),
      );
    request.log.error({ err: error }, 'AutoCrud route failed');
    return sendProblem(reply, problem(500, routeProblems.serverError));
  };
}
