// The list route: the validated query string read into the mapper's list options, offset or
// cursor (keyset) paging, and the page answer with its `next` cursor. No SQL here.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Entity, EntityField } from '../entity.js';
import type { Filter, ListOptions, SortKey } from '../mapper/sql/query.js';
import type { Row } from '../mapper/repository.js';
import type { Access } from './admission.js';
import { scopeIncludes, visible } from './authorize.js';
import { valueType, ValueFault } from '../values/kinds.js';
import { fieldText, fieldValue } from '../values/fields.js';
import type { CursorCodec } from './cursor.js';
import { project, readFields, sendPartial } from './fields.js';
import { readIncludes, shapeRow, type IncludePath } from './includes.js';
import { asPlans } from '../mapper/reads/includes.js';
import { clientSignal } from './abort.js';
import { badRequest, sortDetail, type InvalidParameter } from './problems.js';
import type { FilterParameter, PageLimits } from './schemas.js';
import { parameterText } from '../answers.js';

/** What the list route needs of the mapper. */
export interface ListRepository {
  /** The order a list sorted by `sort` uses (the primary key last); `list` takes it as `sort` without computing it again. */
  order(sort: readonly SortKey[]): readonly SortKey[];
  list(options: ListOptions): Promise<{ rows: Row[]; total?: number }>;
}

/** Everything the list route is made from. */
export interface ListSettings {
  readonly entity: Entity;
  readonly filters: ReadonlyMap<string, FilterParameter>;
  readonly limits: PageLimits;
  readonly repository: ListRepository;
  readonly cursors: CursorCodec;
  /** The access the request was admitted with, under authorization. */
  readonly accessOf?: (request: FastifyRequest) => Access | undefined;
  /** The paths `include` accepts (see includes.ts). */
  readonly includes: readonly IncludePath[];
  /** A condition every row must meet, from the request (the nested route's parent key); part of the cursor's scope. */
  readonly scope?: (request: FastifyRequest) => Filter;
}

interface ListRequest {
  readonly filters: Filter[];
  readonly or: Filter[][];
  readonly sort: SortKey[];
  /** The page asked for; undefined when the query names none (the first page, or a cursor's). */
  readonly page: number | undefined;
  readonly pageSize: number;
}

/** The filters, sort and window of a validated query string, or the parameter at fault. */
function readList(
  query: Record<string, unknown>,
  filters: ReadonlyMap<string, FilterParameter>,
  limits: PageLimits,
): ListRequest | InvalidParameter {
  const plain: Filter[] = [];
  const alternatives: Filter[][] = [];
  for (const [name, raw] of Object.entries(query)) {
    const filter = filters.get(name);
    if (!filter) continue;
    const conditions =
      filter.alternative === undefined ? plain : (alternatives[filter.alternative] ??= []);
    if (filter.op === 'null') {
      conditions.push({ field: filter.field.name, op: filter.op, value: raw });
      continue;
    }
    // Each value in Kit's form (a UUID in lower case, a timestamp in UTC), as the cursor and the answers have it.
    if (filter.op === 'in' || filter.op === 'nin') {
      const values: unknown[] = [];
      for (const item of String(raw).split(',')) {
        const value = fieldText(filter.field, item);
        if (value instanceof ValueFault)
          return {
            in: 'querystring',
            name,
            detail: parameterText('eachValue', {
              item: JSON.stringify(item),
              detail: value.detail,
            }),
          };
        values.push(value);
      }
      conditions.push({ field: filter.field.name, op: filter.op, value: values });
      continue;
    }
    // ajv has coerced numbers and booleans from decimal text; the rest is text.
    // `like` asks for a part of the text: an enum's values do not bound it.
    const value =
      filter.op === 'like' || filter.op === 'ilike'
        ? valueType(filter.field.kind).fromJson(raw)
        : fieldValue(filter.field, raw);
    if (value instanceof ValueFault) return { in: 'querystring', name, detail: value.detail };
    conditions.push({ field: filter.field.name, op: filter.op, value });
  }
  const sort: SortKey[] = [];
  if (typeof query.sort === 'string') {
    for (const key of query.sort.split(',')) {
      const descending = key.startsWith('-');
      const field = descending ? key.slice(1) : key;
      if (sort.some((s) => s.field === field))
        return {
          in: 'querystring',
          name: 'sort',
          detail: parameterText('twice', { name: field }),
        };
      sort.push({ field, descending });
    }
  }
  // Alternatives by their number, gaps closed (filter[or][0] and filter[or][3] are two alternatives).
  const or = alternatives.filter((alternative) => alternative !== undefined);
  return {
    filters: plain,
    or,
    sort,
    page: query.page as number | undefined,
    pageSize: Math.min(query.pageSize as number, limits.maxPageSize),
  };
}

/**
 * What a cursor is bound to: the entity, the order and the filters (not the page size). A cursor
 * presented with another sort or other filters fails its check.
 */
function scopeOf(
  entity: Entity,
  order: readonly SortKey[],
  filters: readonly Filter[],
  or: readonly Filter[][],
  caller: readonly Filter[] = [],
): string {
  const text = (f: Filter) => `${f.field}\u0000${f.op}\u0000${JSON.stringify(f.value)}`;
  const conditions = filters.map(text).sort();
  // Each alternative's conditions in a stable order; the alternatives in the order given.
  for (const alternative of or)
    conditions.push(`\u0002${alternative.map(text).sort().join('\u0002')}`);
  // Under authorization, the caller's scope too: a cursor is good for the scope that issued it only.
  if (caller.length > 0) conditions.push(`\u0004${caller.map(text).join('\u0004')}`);
  return `${entity.name}\u0001${order.map((k) => (k.descending ? '-' : '') + k.field).join(',')}\u0001${conditions.join('\u0001')}`;
}

/** A filter or sort key on a field the caller may not see: refused as a field that does not exist, so that values cannot be probed. */
function hiddenParameter(
  entity: Entity,
  query: Record<string, unknown>,
  filters: ReadonlyMap<string, FilterParameter>,
  hidden: ReadonlySet<string>,
): InvalidParameter | undefined {
  const shown = entity.fields
    .filter((f) => !hidden.has(f.name))
    .map((f) => f.name)
    .join(', ');
  for (const name of Object.keys(query)) {
    const filter = filters.get(name);
    if (filter && hidden.has(filter.field.name))
      return {
        in: 'querystring',
        name,
        detail: parameterText('noSuchField', { entity: entity.name, fields: shown }),
      };
  }
  if (
    typeof query.sort === 'string' &&
    query.sort.split(',').some((key) => hidden.has(key.startsWith('-') ? key.slice(1) : key))
  )
    return { in: 'querystring', name: 'sort', detail: sortDetail(entity, query.sort, hidden) };
  return undefined;
}

/** The list route's handler. */
export function listHandler(settings: ListSettings) {
  const {
    entity,
    filters,
    limits,
    repository,
    cursors,
    accessOf,
    includes,
    scope: scoped,
  } = settings;
  const pk = entity.field(entity.primaryKey) as EntityField;
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const query = request.query as Record<string, unknown>;
    const access = accessOf?.(request);
    const hidden = access?.hidden;
    // Before the values are read: a hidden field's filter is refused whatever its value, as an unknown field's.
    const concealed =
      hidden && hidden.size > 0 ? hiddenParameter(entity, query, filters, hidden) : undefined;
    if (concealed) return badRequest(reply, concealed);
    const list = readList(query, filters, limits);
    if ('detail' in list) return badRequest(reply, list);
    const only =
      typeof query.fields === 'string' ? readFields(entity, query.fields, hidden) : undefined;
    if (only && 'detail' in only) return badRequest(reply, only);
    const included = includes.length > 0 ? readIncludes(includes, query) : undefined;
    if (included && 'detail' in included) return badRequest(reply, included);
    // Included rows of an entity with rules: scoped by the caller's rules of that entity, hidden fields out.
    const shaped = included ? await scopeIncludes(request, reply, included, hidden) : undefined;
    if (shaped === false) return reply;
    if (scoped) list.filters.push(scoped(request));
    const order = repository.order(list.sort);
    const fields = order.map((k) => entity.field(k.field) as EntityField);
    const scope = scopeOf(entity, order, list.filters, list.or, access?.scope?.where);
    let after: unknown[] | undefined;
    if (typeof query.after === 'string') {
      // Any page, the first one too: a cursor page starts where the cursor points.
      if (list.page !== undefined)
        return badRequest(reply, {
          in: 'querystring',
          name: 'page',
          detail: parameterText('pageWithAfter'),
        });
      after = cursors.decode(scope, query.after);
      // The check above proves the token is one this service issued; its values are checked again all the same.
      const fits =
        after?.length === order.length &&
        after.every((v, i) =>
          v === null ? fields[i] !== pk : valueType((fields[i] as EntityField).kind).isCanonical(v),
        );
      if (!after || !fits)
        return badRequest(reply, {
          in: 'querystring',
          name: 'after',
          detail: parameterText('notACursor'),
        });
    }
    const count = query.count !== false;
    const page = list.page ?? 1;
    // One row more than the page: `next` is null exactly when no row follows.
    const signal = clientSignal(request, reply);
    const { rows, total } = await repository.list({
      filters: list.filters,
      ...(list.or.length > 0 ? { or: list.or } : {}),
      sort: order,
      offset: after ? 0 : (page - 1) * list.pageSize,
      limit: list.pageSize + 1,
      count,
      ...(after ? { after } : {}),
      ...(access?.scope ? { scope: access.scope } : {}),
      ...(shaped ? { include: asPlans(shaped.nodes) } : {}),
      signal,
    });
    const more = rows.length > list.pageSize;
    if (more) rows.length = list.pageSize;
    const last = more ? rows[rows.length - 1] : undefined;
    const next = last
      ? cursors.encode(
          scope,
          order.map((k) => last[k.field] ?? null),
        )
      : null;
    if (only || included) sendPartial(reply);
    return {
      items:
        included && shaped
          ? rows.map((row) => shapeRow(row, only, shaped.nodes, included.fields, '', shaped.hidden))
          : only
            ? rows.map((row) => project(row, only))
            : hidden && hidden.size > 0
              ? rows.map((row) => visible(row, hidden))
              : rows,
      ...(count ? { total } : {}),
      ...(after ? {} : { page }),
      pageSize: list.pageSize,
      ...(count ? { totalPages: Math.ceil((total as number) / list.pageSize) } : {}),
      next,
    };
  };
}
