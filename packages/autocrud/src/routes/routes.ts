// The generated routes of one entity, as route options for the group: schemas from the entity,
// handlers that call the repository, problem answers for everything else. No SQL here.
import type { FastifyReply, FastifyRequest, FastifySchema, onRequestHookHandler, RouteOptions } from 'fastify';
import type { Entity, EntityField } from '../entity.js';
import type { Filter, ListOptions, SortKey } from '../mapper/query.js';
import type { Row } from '../mapper/repository.js';
import { allows, CrudOperations } from '../operations.js';
import { badRequest, crudErrorHandler, notFound, type InvalidParameter } from './problems.js';
import { inputName, keyParams, listQuery, pageSchema, problemResponse, ref, type FilterParameter, type PageLimits } from './schemas.js';
import type { CrudValidation } from './validation.js';

/** What the routes need of the mapper: the repository's operations, nothing of SQL. */
export interface CrudRepository {
  list(options: ListOptions): Promise<{ rows: Row[]; total: number }>;
  all(): Promise<Row[]>;
  get(key: unknown): Promise<Row | undefined>;
  create(input: Readonly<Record<string, unknown>>): Promise<Row>;
  update(key: unknown, input: Readonly<Record<string, unknown>>): Promise<Row | undefined>;
  delete(key: unknown): Promise<boolean>;
}

/** Everything the routes of one `@AutoCrud` class are made from. */
export interface CrudRouteSettings {
  readonly entity: Entity;
  readonly operations: number;
  readonly limits: PageLimits;
  readonly repository: CrudRepository;
  readonly validation: CrudValidation;
  /** The group's URL prefix, for `Location` (`/api/product`). */
  readonly prefix: string;
  /** `app.kitAuthenticate` when every route requires a bearer token. */
  readonly authenticate?: onRequestHookHandler;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Text no engine stores faithfully: PostgreSQL refuses NUL, and a lone surrogate would be stored
 * as U+FFFD. Refused up front, the same on every engine.
 */
function textFault(value: string): string | undefined {
  if (value.includes('\u0000')) return 'must not contain NUL characters';
  if (LONE_SURROGATE.test(value)) return 'must be well-formed Unicode (no lone surrogates)';
  return undefined;
}

/** The list request from a validated query string, or the parameter at fault. */
function readList(query: Record<string, unknown>, entity: Entity, filters: ReadonlyMap<string, FilterParameter>, limits: PageLimits): ListOptions | InvalidParameter {
  const conditions: Filter[] = [];
  for (const [name, raw] of Object.entries(query)) {
    const filter = filters.get(name);
    if (!filter) continue;
    if (filter.op === 'in' || filter.op === 'nin') {
      const values: unknown[] = [];
      for (const item of String(raw).split(',')) {
        const value = listValue(filter.field, item);
        if (typeof value === 'object' && value !== null) return { in: 'querystring', name, detail: (value as { fault: string }).fault };
        values.push(value);
      }
      conditions.push({ field: filter.field.name, op: filter.op, value: values });
      continue;
    }
    const fault = typeof raw === 'string' ? textFault(raw) : undefined;
    if (fault) return { in: 'querystring', name, detail: fault };
    conditions.push({ field: filter.field.name, op: filter.op, value: raw });
  }
  const sort: SortKey[] = [];
  if (typeof query.sort === 'string') {
    for (const key of query.sort.split(',')) {
      const descending = key.startsWith('-');
      const field = descending ? key.slice(1) : key;
      if (sort.some((s) => s.field === field)) return { in: 'querystring', name: 'sort', detail: `names ${field} twice` };
      sort.push({ field, descending });
    }
  }
  const page = query.page as number;
  const pageSize = Math.min(query.pageSize as number, limits.maxPageSize);
  return { filters: conditions, sort, offset: (page - 1) * pageSize, limit: pageSize };
}

/** One value of an `in`/`nin` list, converted to the field's type (the pattern has checked its shape). */
function listValue(field: EntityField, text: string): unknown {
  if (field.type === 'integer') {
    const n = Number(text);
    return Number.isSafeInteger(n) ? n : { fault: `holds ${text}, which is not a safe integer` };
  }
  if (field.type === 'number') {
    const n = Number(text);
    return Number.isFinite(n) ? n : { fault: `holds ${text}, which is not a finite number` };
  }
  const fault = textFault(text);
  return fault ? { fault } : text;
}

/** The body's string fields that no engine stores faithfully. */
function bodyFault(body: Record<string, unknown>): InvalidParameter | undefined {
  for (const [name, value] of Object.entries(body)) {
    const fault = typeof value === 'string' ? textFault(value) : undefined;
    if (fault) return { in: 'body', name, detail: fault };
  }
  return undefined;
}

/** Route schemas carry OpenAPI keys (summary, description) that Fastify's type does not list. */
function documented(schema: Record<string, unknown>): FastifySchema {
  return schema as FastifySchema;
}

function isFault(value: unknown): value is InvalidParameter {
  return typeof value === 'object' && value !== null && 'detail' in value && 'in' in value;
}

/** The route options of one entity's generated routes, relative to its group. */
export function crudRoutes(settings: CrudRouteSettings): RouteOptions[] {
  const { entity, operations, limits, repository, validation } = settings;
  const pk = entity.primaryKey;
  const { schema: querystring, filters } = listQuery(entity, limits);
  const common = {
    errorHandler: crudErrorHandler(entity, filters),
    validatorCompiler: validation.compiler,
    ...(settings.authenticate ? { onRequest: settings.authenticate } : {}),
  };
  const keyOf = (request: FastifyRequest) => (request.params as Record<string, unknown>)[pk];
  const routes: RouteOptions[] = [];

  if (allows(operations, CrudOperations.List)) {
    routes.push({
      ...common,
      method: 'GET',
      url: '',
      schema: documented({
        summary: `List ${entity.name} rows, a page at a time`,
        description: 'Filters: filter[field]=value or filter[field][op]=value with op one of eq, ne, gt, gte, lt, lte, like, in, nin, null; all must hold.',
        querystring,
        response: { 200: pageSchema(entity), 400: problemResponse(400), 503: problemResponse(503) },
      }),
      handler: async (request, reply: FastifyReply) => {
        const list = readList(request.query as Record<string, unknown>, entity, filters, limits);
        if (isFault(list)) return badRequest(reply, list);
        const { rows, total } = await repository.list(list);
        const page = list.offset / list.limit + 1;
        return { items: rows, total, page, pageSize: list.limit, totalPages: Math.ceil(total / list.limit) };
      },
    });
  }
  if (allows(operations, CrudOperations.ListAll)) {
    routes.push({
      ...common,
      method: 'GET',
      url: 'all',
      schema: documented({
        summary: `Every ${entity.name} row, unpaged`,
        response: { 200: { type: 'array', items: ref(entity.name) }, 503: problemResponse(503) },
      }),
      handler: async () => repository.all(),
    });
  }
  const params = keyParams(entity);
  if (allows(operations, CrudOperations.Get)) {
    routes.push({
      ...common,
      method: 'GET',
      url: `{${pk}}`,
      schema: documented({
        summary: `Get one ${entity.name}`,
        params,
        response: { 200: ref(entity.name), 400: problemResponse(400), 404: problemResponse(404), 503: problemResponse(503) },
      }),
      handler: async (request, reply) => (await repository.get(keyOf(request))) ?? notFound(reply, entity, keyOf(request)),
    });
  }
  if (allows(operations, CrudOperations.Create)) {
    routes.push({
      ...common,
      method: 'POST',
      url: '',
      schema: documented({
        summary: `Create a ${entity.name}`,
        body: ref(inputName(entity)),
        response: {
          201: { description: `The ${entity.name} as stored; Location names it.`, headers: { Location: { type: 'string' } }, ...ref(entity.name) },
          400: problemResponse(400),
          409: problemResponse(409),
          503: problemResponse(503),
        },
      }),
      handler: async (request, reply) => {
        const body = request.body as Record<string, unknown>;
        const fault = bodyFault(body);
        if (fault) return badRequest(reply, fault);
        const row = await repository.create(body);
        return reply
          .code(201)
          .header('location', `${settings.prefix}/${encodeURIComponent(String(row[pk]))}`)
          .send(row);
      },
    });
  }
  if (allows(operations, CrudOperations.Update)) {
    routes.push({
      ...common,
      method: 'PUT',
      url: `{${pk}}`,
      schema: documented({
        summary: `Replace the writable fields of a ${entity.name}`,
        params,
        body: ref(inputName(entity)),
        response: { 200: ref(entity.name), 400: problemResponse(400), 404: problemResponse(404), 409: problemResponse(409), 503: problemResponse(503) },
      }),
      handler: async (request, reply) => {
        const body = request.body as Record<string, unknown>;
        const fault = bodyFault(body);
        if (fault) return badRequest(reply, fault);
        return (await repository.update(keyOf(request), body)) ?? notFound(reply, entity, keyOf(request));
      },
    });
  }
  if (allows(operations, CrudOperations.Delete)) {
    routes.push({
      ...common,
      method: 'DELETE',
      url: `{${pk}}`,
      schema: documented({
        summary: entity.softDelete ? `Delete a ${entity.name} (soft: it disappears from every read)` : `Delete a ${entity.name}`,
        params,
        response: { 204: { description: 'Deleted.', type: 'null' }, 400: problemResponse(400), 404: problemResponse(404), 409: problemResponse(409), 503: problemResponse(503) },
      }),
      handler: async (request, reply) => {
        if (!(await repository.delete(keyOf(request)))) return notFound(reply, entity, keyOf(request));
        return reply.code(204).send();
      },
    });
  }
  return routes;
}
