// The list route: the validated query string read into the mapper's list options, offset or
// cursor (keyset) paging, and the page answer with its `next` cursor. No SQL here.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Entity, EntityField } from '../entity.js';
import { orderOf, type Filter, type ListOptions, type SortKey } from '../mapper/query.js';
import type { Row } from '../mapper/repository.js';
import { fitsField, type CursorCodec } from './cursor.js';
import { clientSignal } from './abort.js';
import { badRequest, type InvalidParameter } from './problems.js';
import type { FilterParameter, PageLimits } from './schemas.js';

/** What the list route needs of the mapper. */
export interface ListRepository {
  list(options: ListOptions): Promise<{ rows: Row[]; total?: number }>;
}

/** Everything the list route is made from. */
export interface ListSettings {
  readonly entity: Entity;
  readonly filters: ReadonlyMap<string, FilterParameter>;
  readonly limits: PageLimits;
  readonly repository: ListRepository;
  readonly cursors: CursorCodec;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Text no engine stores faithfully: PostgreSQL refuses NUL, and a lone surrogate would be stored
 * as U+FFFD. Refused up front, the same on every engine.
 */
export function textFault(value: string): string | undefined {
  if (value.includes('\u0000')) return 'must not contain NUL characters';
  if (LONE_SURROGATE.test(value)) return 'must be well-formed Unicode (no lone surrogates)';
  return undefined;
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

interface ListRequest {
  readonly filters: Filter[];
  readonly sort: SortKey[];
  readonly page: number;
  readonly pageSize: number;
}

/** The filters, sort and window of a validated query string, or the parameter at fault. */
function readList(query: Record<string, unknown>, filters: ReadonlyMap<string, FilterParameter>, limits: PageLimits): ListRequest | InvalidParameter {
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
  return { filters: conditions, sort, page: query.page as number, pageSize: Math.min(query.pageSize as number, limits.maxPageSize) };
}

/**
 * What a cursor is bound to: the entity, the order and the filters (not the page size). A cursor
 * presented with another sort or other filters fails its check.
 */
function scopeOf(entity: Entity, order: readonly SortKey[], filters: readonly Filter[]): string {
  const conditions = filters.map((f) => `${f.field}\u0000${f.op}\u0000${JSON.stringify(f.value)}`).sort();
  return `${entity.name}\u0001${order.map((k) => (k.descending ? '-' : '') + k.field).join(',')}\u0001${conditions.join('\u0001')}`;
}

const NOT_A_CURSOR = 'is not a cursor this list issued for this query: pass the `next` of the previous page unchanged, with the same sort and filters';

/** The list route's handler. */
export function listHandler(settings: ListSettings) {
  const { entity, filters, limits, repository, cursors } = settings;
  const pk = entity.field(entity.primaryKey) as EntityField;
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const query = request.query as Record<string, unknown>;
    const list = readList(query, filters, limits);
    if ('detail' in list) return badRequest(reply, list);
    const order = orderOf(entity, list.sort);
    const fields = order.map((k) => entity.field(k.field) as EntityField);
    const scope = scopeOf(entity, order, list.filters);
    let after: unknown[] | undefined;
    if (typeof query.after === 'string') {
      if (list.page !== 1) return badRequest(reply, { in: 'querystring', name: 'page', detail: 'cannot be combined with after: a cursor page starts where the cursor points' });
      after = cursors.decode(scope, query.after);
      // The check above proves the token is one this service issued; its values are checked again all the same.
      const fits = after?.length === order.length && after.every((v, i) => (v === null ? fields[i] !== pk : fitsField(fields[i] as EntityField, v)));
      if (!after || !fits) return badRequest(reply, { in: 'querystring', name: 'after', detail: NOT_A_CURSOR });
    }
    const count = query.count !== false;
    const { rows, total } = await repository.list({
      filters: list.filters,
      sort: list.sort,
      offset: after ? 0 : (list.page - 1) * list.pageSize,
      limit: list.pageSize,
      count,
      ...(after ? { after } : {}),
      signal: clientSignal(request, reply),
    });
    const last = rows.length === list.pageSize ? rows[rows.length - 1] : undefined;
    const next = last ? cursors.encode(scope, order.map((k) => last[k.field] ?? null)) : null;
    return {
      items: rows,
      ...(count ? { total } : {}),
      ...(after ? {} : { page: list.page }),
      pageSize: list.pageSize,
      ...(count ? { totalPages: Math.ceil((total as number) / list.pageSize) } : {}),
      next,
    };
  };
}
