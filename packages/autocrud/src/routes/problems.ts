// Every answer of a generated route that is not a success is a problem-details body. This file
// turns validation errors into a 400 naming the parameter, and the mapper's errors into 409, 400
// and 503; nothing the database said (SQL, constraint names, hosts) reaches the client.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { sendProblem, type ProblemDetails } from '@kit/core';
import type { Entity } from '../entity.js';
import { ClientGoneError } from './abort.js';
import {
  ConnectionLostError,
  ConstraintViolationError,
  DatabaseBusyError,
  DatabaseUnavailableError,
  InvalidValueError,
  MissingReferenceError,
  SchemaMismatchError,
  StillReferencedError,
  StatementTimeoutError,
  UnrepresentableValueError,
  VersionConflictError,
} from '../mapper/errors.js';
import { etagOf } from './conditional.js';
import { MAX_ALTERNATIVES, operatorsFor, FILTER_OPERATORS } from '../mapper/sql/query.js';
import { MAX_LIST_VALUES, MAX_VALUE_LENGTH, type FilterParameter } from './schemas.js';
import { allowedText } from '../values/fields.js';

/** A key a body parser refused (`__proto__`), answered 400 by the routes' error handler. */
export class BodyKeyError extends Error {
  readonly statusCode = 400;
  constructor(readonly key: string) {
    super(`The body holds the key ${key}`);
  }
}

/** `Retry-After` of a 503 while the database is unavailable, in seconds. */
export const RETRY_AFTER_SECONDS = 5;
/** `Retry-After` of a 503 while the database is busy (no free connection): it frees up in moments. */
export const BUSY_RETRY_AFTER_SECONDS = 1;

/** Where a parameter at fault is, named as Kit's own validation problems name it. */
export type ParameterLocation = 'querystring' | 'params' | 'headers' | 'body';

/** One parameter at fault, as the 400 answer's `errors` lists it (with a JSON pointer added, as in Kit's own problems). */
export interface InvalidParameter {
  readonly in: ParameterLocation;
  readonly name: string;
  readonly detail: string;
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
export function problem(status: number, detail: string, extra?: Record<string, unknown>): ProblemDetails {
  return { type: 'about:blank', title: TITLES[status] ?? 'Error', status, detail, ...extra };
}

const WHERE: Readonly<Record<ParameterLocation, string>> = { querystring: 'Query parameter', params: 'Path parameter', headers: 'Header', body: 'Body field' };

/** Answers 400 naming the parameter. */
export function badRequest(reply: FastifyReply, fault: InvalidParameter): FastifyReply {
  const subject = fault.in === 'body' && fault.name === '' ? 'The body' : `${WHERE[fault.in]} '${fault.name}'`;
  return sendProblem(reply, problem(400, `${subject} ${fault.detail}.`, { errors: [{ in: fault.in, name: fault.name, pointer: pointerTo(fault.name), detail: fault.detail }] }));
}

/** The fields of the unique key a conflict names (by their columns), when the database named it. */
export function takenFields(entity: Entity, error: ConstraintViolationError): string[] | undefined {
  if (error.kind !== 'unique' || !error.columns) return undefined;
  const fields = error.columns.map((column) => entity.fields.find((f) => f.column === column || f.column.toLowerCase() === column.toLowerCase())?.name);
  return fields.every((f): f is string => f !== undefined) && fields.length > 0 ? fields : undefined;
}

/** How a unique conflict on `fields` is explained. */
export function conflictText(fields: readonly string[]): string {
  return fields.length === 1 ? `${fields[0] as string} must be unique` : `the combination of ${fields.join(', ')} must be unique`;
}

/** Answers 428: the write needs `If-Match`. */
export function preconditionRequired(reply: FastifyReply, entity: Entity): FastifyReply {
  return sendProblem(reply, problem(428, `Writes to ${entity.name} need If-Match: send the ETag of the row as read (GET answers it), so that no one else's write is overwritten.`));
}

/** Answers 404 for a primary key with no (visible) row. */
export function notFound(reply: FastifyReply, entity: Entity, key: unknown): FastifyReply {
  return sendProblem(reply, problem(404, `No ${entity.name} with ${entity.primaryKey} ${JSON.stringify(key)}.`));
}

/** A JSON Pointer's first segment, unescaped (`/filter[a]~1b` -> `filter[a]/b`). */
function pointerHead(pointer: string): string {
  const head = pointer.split('/')[1] ?? '';
  return head.replace(/~1/g, '/').replace(/~0/g, '~');
}

interface AjvError {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

const ARTICLE: Readonly<Record<string, string>> = { integer: 'an integer', number: 'a number', string: 'a string', boolean: 'true or false', object: 'a JSON object', array: 'an array', null: 'null' };

function typeText(params: Record<string, unknown>): string {
  const types = String(params.type).split(',');
  return `must be ${types.map((t) => ARTICLE[t] ?? t).join(' or ')}`;
}

/** Why a query parameter the schema does not list is refused, as precisely as its name allows. */
function unknownQueryParameter(entity: Entity, name: string, hidden: ReadonlySet<string> | undefined): string {
  const alternative = /^filter\[or\](?:\[([^\]]*)\](.*))?$/.exec(name);
  if (alternative) {
    const [, index = '', rest = ''] = alternative;
    if (!/^\d+$/.test(index) || Number(index) >= MAX_ALTERNATIVES) return `is not an alternative of the OR group: write filter[or][n][field][operator]=value with n from 0 to ${MAX_ALTERNATIVES - 1} (at most ${MAX_ALTERNATIVES} alternatives)`;
    if (rest.startsWith('[or]')) return 'nests an OR group in an alternative: OR groups do not nest (one level: filter[or][n][field][operator])';
    return unknownQueryParameter(entity, `filter${rest}`, hidden);
  }
  const match = /^filter\[([^\]]*)\](?:\[([^\]]*)\])?$/.exec(name);
  if (!match) {
    if (name.startsWith('filter')) return 'is malformed: write filter[field]=value or filter[field][operator]=value';
    return 'is not accepted: the list takes page, pageSize, after, count, sort, fields and filter[field][operator]';
  }
  const [, fieldName = '', op] = match;
  const field = entity.fields.find((f) => f.name === fieldName && !hidden?.has(f.name));
  if (!field) return `names no field of ${entity.name}; fields: ${shownFields(entity, hidden)}`;
  if (op !== undefined && !(FILTER_OPERATORS as readonly string[]).includes(op)) return `has an unknown operator; operators: ${FILTER_OPERATORS.join(', ')}`;
  return `uses an operator that does not apply to the ${field.kind} field ${field.name}; it takes ${operatorsFor(field).join(', ')}`;
}

/** The fields a caller may see, as the 400s list them (`hidden`: the fields its authorization rule hides). */
function shownFields(entity: Entity, hidden: ReadonlySet<string> | undefined): string {
  return entity.fields.filter((f) => !hidden?.has(f.name)).map((f) => f.name).join(', ');
}

function describeQueryError(entity: Entity, filters: ReadonlyMap<string, FilterParameter>, e: AjvError, hidden: ReadonlySet<string> | undefined): InvalidParameter {
  if (e.keyword === 'additionalProperties') {
    const name = String(e.params.additionalProperty);
    return { in: 'querystring', name, detail: unknownQueryParameter(entity, name, hidden) };
  }
  const name = pointerHead(e.instancePath);
  const filter = filters.get(name);
  // A filter on a hidden field is refused as one on a field that does not exist, whatever its value.
  if (filter && hidden?.has(filter.field.name)) return { in: 'querystring', name, detail: `names no field of ${entity.name}; fields: ${shownFields(entity, hidden)}` };
  let detail: string;
  if (e.keyword === 'pattern' && filter) {
    const kind = filter.field.kind;
    detail = `must be a comma-separated list of 1 to ${MAX_LIST_VALUES} ${kind === 'uuid' ? 'UUID' : kind} values${kind === 'string' ? ` of at most ${MAX_VALUE_LENGTH} characters` : ''}`;
  } else if (e.keyword === 'pattern' && name === 'sort') {
    detail = `must list fields of ${entity.name} (${shownFields(entity, hidden)}), comma-separated, each optionally prefixed with -`;
  } else if ((e.keyword === 'pattern' || e.keyword === 'maxLength' || e.keyword === 'minLength') && name === 'fields') {
    detail = `must list fields of ${entity.name} (${shownFields(entity, hidden)}), comma-separated, each at most once`;
  } else if (e.keyword === 'type') {
    detail = typeText(e.params);
  } else if (e.keyword === 'enum' && Array.isArray(e.params.allowedValues)) {
    detail = allowedText(e.params.allowedValues as string[]);
  } else if (e.keyword === 'maxLength' && filter) {
    detail = `must be at most ${String(e.params.limit)} characters`;
  } else {
    detail = e.message ?? 'is not valid';
  }
  return { in: 'querystring', name, detail };
}

/** Marks an ajv error of one row of an array body, so that the answer names the row (`[3].price`). */
export const BATCH_ROW = 'kitBatchRow';

/** Marks an ajv error of one relation's rows of a nested create (`{ name, entity }`), so that the answer names it (`lines[3].quantity`). */
export const BATCH_RELATION = 'kitBatchRelation';

/** A row's field as the client wrote it: `[3].price`, or `[3]` for the row itself; `lines[3].quantity` in a relation. */
export function rowPath(index: number, name: string, relation?: string): string {
  const row = `${relation ?? ''}[${index}]`;
  return name === '' ? row : `${row}.${name}`;
}

function describeBodyError(entity: Entity, e: AjvError): InvalidParameter {
  const row = e.params[BATCH_ROW];
  if (typeof row === 'number') {
    const relation = e.params[BATCH_RELATION] as { name: string; entity: Entity } | undefined;
    const fault = describeBodyError(relation?.entity ?? entity, { ...e, params: { ...e.params, [BATCH_ROW]: undefined, [BATCH_RELATION]: undefined } });
    return { ...fault, name: rowPath(row, fault.name, relation?.name) };
  }
  if (e.keyword === 'additionalProperties') {
    const name = String(e.params.additionalProperty);
    const known = entity.fields.some((f) => f.name === name);
    return { in: 'body', name, detail: known ? 'is read-only' : `is not a field of ${entity.name}` };
  }
  if (e.keyword === 'required') return { in: 'body', name: String(e.params.missingProperty), detail: 'is required' };
  // The field, not a path inside a JSON field's value.
  const name = pointerHead(e.instancePath);
  const inner = e.instancePath.slice(name.length + 1);
  const detail = e.keyword === 'type' ? typeText(e.params) : e.keyword === 'enum' && Array.isArray(e.params.allowedValues) ? allowedText(e.params.allowedValues as string[]) : (e.message ?? 'is not valid');
  return { in: 'body', name, detail: inner ? `does not match its schema at ${inner}: ${detail}` : detail };
}

/** A header as documented (`Idempotency-Key`), from ajv's lower-case name. */
function headerName(e: AjvError): string {
  const name = e.keyword === 'required' ? String(e.params.missingProperty) : pointerHead(e.instancePath);
  return name.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());
}

/** The parameter at fault in Fastify's validation error. */
function describeValidation(entity: Entity, filters: ReadonlyMap<string, FilterParameter>, error: FastifyError, hidden: ReadonlySet<string> | undefined): InvalidParameter {
  const first = (error.validation?.[0] ?? { keyword: '', instancePath: '', params: {} }) as unknown as AjvError;
  switch (error.validationContext) {
    case 'querystring':
      return describeQueryError(entity, filters, first, hidden);
    case 'params':
      return { in: 'params', name: pointerHead(first.instancePath), detail: first.keyword === 'type' ? typeText(first.params) : (first.message ?? 'is not valid') };
    case 'headers':
      return { in: 'headers', name: headerName(first), detail: first.keyword === 'pattern' ? 'must be 1 to 255 visible ASCII characters (a UUID, for example)' : (first.message ?? 'is not valid') };
    default:
      return describeBodyError(entity, first);
  }
}

/**
 * The `errorHandler` of every generated route: validation errors, unparsable bodies and the
 * mapper's errors become problem details; anything else is a logged 500 that says nothing more.
 */
export function crudErrorHandler(entity: Entity, filters: ReadonlyMap<string, FilterParameter>, hiddenOf?: (request: FastifyRequest) => ReadonlySet<string> | undefined) {
  return function autoCrudErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
    if (error.validation) {
      const [first] = error.validation as unknown as AjvError[];
      // A required If-Match (requireIfMatch) is declared in the schema, for the document; missing, it is a 428.
      if (error.validationContext === 'headers' && first?.keyword === 'required' && first.params.missingProperty === 'if-match') return preconditionRequired(reply, entity);
      return badRequest(reply, describeValidation(entity, filters, error, hiddenOf?.(request)));
    }
    if (error instanceof ConnectionLostError) {
      // One connection broke, not the database: the next request takes another.
      return sendProblem(reply, problem(503, 'The database connection was lost while the request ran; a write may or may not have been applied. Try again in a moment.'), {
        'retry-after': String(BUSY_RETRY_AFTER_SECONDS),
      });
    }
    if (error instanceof DatabaseUnavailableError) {
      return sendProblem(reply, problem(503, 'The database is unavailable; try again later.'), { 'retry-after': String(RETRY_AFTER_SECONDS) });
    }
    if (error instanceof DatabaseBusyError) {
      return sendProblem(reply, problem(503, 'The database is busy (no connection became free in time); nothing was done. Try again in a moment.'), {
        'retry-after': String(BUSY_RETRY_AFTER_SECONDS),
      });
    }
    if (error instanceof StatementTimeoutError) {
      return sendProblem(reply, problem(504, 'The database did not complete the request in time; it was cancelled and nothing of it was written.'));
    }
    if (error instanceof ClientGoneError) {
      // Nobody is left to read an answer: 499 (nginx's "client closed request") for the access log and the audit trail.
      request.log.debug('AutoCrud: the client went away; its statement was cancelled');
      return reply.code(499).send();
    }
    if (error instanceof SchemaMismatchError) {
      request.log.error({ err: error }, 'AutoCrud: the database schema does not fit the entities');
      return sendProblem(reply, problem(503, 'The database is not ready for this resource; try again later.'), { 'retry-after': String(RETRY_AFTER_SECONDS) });
    }
    if (error instanceof MissingReferenceError) {
      const detail = `names ${error.target} ${JSON.stringify(error.key)}, which does not exist`;
      return sendProblem(
        reply,
        problem(422, `Body field '${error.field}' ${detail}; nothing was written.`, { errors: [{ in: 'body', name: error.field, pointer: pointerTo(error.field), detail }] }),
      );
    }
    if (error instanceof StillReferencedError) {
      return sendProblem(
        reply,
        problem(409, `${error.entity} ${JSON.stringify(error.key)} is still referred to by ${error.referrer} ${JSON.stringify(error.referrerKey)} (field '${error.field}'); nothing was deleted. Delete those rows first.`, {
          referrer: { entity: error.referrer, field: error.field, key: error.referrerKey },
        }),
      );
    }
    if (error instanceof ConstraintViolationError) {
      const fields = takenFields(entity, error);
      if (fields) {
        return sendProblem(reply, problem(409, `A ${entity.name} with this ${fields.join(' and ')} already exists (${conflictText(fields)}); nothing was written.`, { errors: fields.map((name) => ({ in: 'body', name, pointer: pointerTo(name), detail: 'is taken by another row' })) }));
      }
      return sendProblem(reply, problem(409, error.kind === 'unique' ? `The ${entity.name} conflicts with an existing one (a unique value is taken).` : `The ${entity.name} conflicts with related data.`));
    }
    if (error instanceof VersionConflictError) {
      return sendProblem(
        reply,
        problem(412, `The ${entity.name} changed since it was read: it is at version ${error.currentVersion} now, and nothing was written. Read it again and retry with its ETag.`),
        { etag: etagOf(error.currentVersion) },
      );
    }
    if (error instanceof UnrepresentableValueError) {
      // The data, not the request, is at fault: a 500 whose log line names the field and the row.
      request.log.error({ err: error }, 'AutoCrud: a stored value cannot be answered exactly');
      return sendProblem(reply, problem(500, `A stored ${entity.name} value cannot be answered exactly, so nothing was answered; the service's log names it.`));
    }
    if (error instanceof InvalidValueError) return sendProblem(reply, problem(400, `A value cannot be stored in the ${entity.name}: out of range for its column or against a database constraint.`));
    const status = typeof error.statusCode === 'number' ? error.statusCode : 500;
    if (error instanceof BodyKeyError) return badRequest(reply, { in: 'body', name: error.key, detail: `is not a field of ${entity.name}` });
    if (status >= 400 && status < 500) {
      // Fastify's own client errors: an unparsable, too large or wrongly typed body.
      const detail =
        status === 415 ? 'The body must be application/json.' : status === 413 ? 'The body is too large.' : status === 400 ? 'The body is not valid JSON.' : 'The request is not valid.';
      return sendProblem(reply, problem(status, detail));
    }
    request.log.error({ err: error }, 'AutoCrud route failed');
    return sendProblem(reply, problem(500, 'The request could not be completed.'));
  };
}
