// GET /{pk}/history: a row's changes from Kit's change history, newest first, a page at a time
// with the list's signed cursors. The history is read through the history entity's repository
// (a keyset list); no SQL here. Under the class's authorization the route takes the rule of the
// row's read: a row outside the caller's scope answers 404 (its history is never read), and the
// fields hidden from the caller leave every recorded value and every list of changed fields.
import type { FastifyReply, FastifyRequest, FastifySchema, RouteOptions } from 'fastify';
import type { Entity } from '../entity.js';
import { ChangeHistory } from '../mapper/history/history.js';
import { clientSignal } from './abort.js';
import { MAX_CURSOR_LENGTH, type CursorCodec } from './cursor.js';
import type { ListRepository } from './list.js';
import type { RouteAuthorization } from './authorize.js';
import { badRequest, notFound } from './problems.js';
import { openapiText } from './openapi-text.js';
import { routeResponses } from './responses.js';
import { problemResponse } from './answer-schemas.js';
import { keyParams, ref, type PageLimits } from './schemas.js';
import { parameterText } from '../answers.js';

/** Everything the history route is made from. */
export interface HistorySettings {
  readonly entity: Entity;
  readonly limits: PageLimits;
  /** The history entity's repository. */
  readonly history: ListRepository;
  readonly cursors: CursorCodec;
  /** The row's key in Kit's form, from the request. */
  readonly keyOf: (request: FastifyRequest) => unknown;
  /** The class's authorization (its guard is on the route's options). */
  readonly authz: RouteAuthorization;
  /** The operation flag whose rule the route takes (the row's read by key, or its list). */
  readonly readFlag: number;
  /** True when the caller may read the row now (its read by key under the caller's scope). */
  readonly exists: (key: unknown, request: FastifyRequest, reply: FastifyReply) => Promise<boolean>;
}

/** A history row without the fields `hidden` from the caller: out of `changed`, `before` and `after`. */
function concealed(
  row: Record<string, unknown>,
  hidden: ReadonlySet<string>,
): Record<string, unknown> {
  const strip = (values: unknown): unknown => {
    if (typeof values !== 'object' || values === null) return values;
    const out: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(values)) if (!hidden.has(name)) out[name] = value;
    return out;
  };
  const changed = Array.isArray(row.changed)
    ? (row.changed as unknown[]).filter((name) => !hidden.has(name as string))
    : row.changed;
  return { ...row, changed, before: strip(row.before), after: strip(row.after) };
}

const NEWEST_FIRST = [{ field: 'id', descending: true }] as const;

/** The page answer: the KitChange component's rows. */
function historyPage(): Record<string, unknown> {
  return {
    description: openapiText.history.ok,
    type: 'object',
    required: ['items', 'pageSize', 'next'],
    properties: {
      items: { type: 'array', items: ref(ChangeHistory.name) },
      pageSize: { type: 'integer', description: openapiText.history.pageSize },
      next: { type: ['string', 'null'], description: openapiText.history.next },
    },
  };
}

/** The route options of `GET /{pk}/history`, relative to the group. */
export function historyRoute(
  settings: HistorySettings,
  common: Partial<RouteOptions>,
): RouteOptions {
  const { entity, limits, history, cursors, keyOf, authz, readFlag, exists } = settings;
  const order = history.order([...NEWEST_FIRST]);
  return {
    ...common,
    method: 'GET',
    url: `{${entity.primaryKey}}/history`,
    schema: {
      summary: openapiText.history.summary(entity),
      description: openapiText.history.description,
      params: keyParams(entity),
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: {
          pageSize: {
            type: 'integer',
            minimum: 1,
            maximum: limits.maxPageSize,
            default: limits.defaultPageSize,
            description: openapiText.history.pageSizeParameter(limits.maxPageSize),
          },
          after: {
            type: 'string',
            minLength: 1,
            maxLength: MAX_CURSOR_LENGTH,
            description: openapiText.history.afterParameter,
          },
        },
      },
      ...authz.schema(readFlag),
      response: {
        200: historyPage(),
        400: problemResponse(400),
        ...(authz.accessOf ? { 404: problemResponse(404) } : {}),
        ...routeResponses(authz),
      },
    } as FastifySchema,
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      const query = request.query as { pageSize: number; after?: string };
      const rowKey = String(keyOf(request));
      const scope = `${ChangeHistory.table}\u0001${entity.name}\u0001${rowKey}`;
      let after: unknown[] | undefined;
      if (query.after !== undefined) {
        after = cursors.decode(scope, query.after);
        if (!after || after.length !== 1 || !Number.isSafeInteger(after[0])) {
          return badRequest(reply, {
            in: 'querystring',
            name: 'after',
            detail: parameterText('notAHistoryCursor'),
          });
        }
      }
      const access = authz.accessOf?.(request);
      // Under a row check (or a where hook), the row must be one the caller may read now: one
      // outside the scope, or gone, answers 404 and its history is not read.
      if (
        access?.scope &&
        access.scope.where.length > 0 &&
        !(await exists(keyOf(request), request, reply))
      )
        return notFound(reply, entity, keyOf(request));
      const { rows } = await history.list({
        filters: [
          { field: 'entity', op: 'eq', value: entity.name },
          { field: 'rowKey', op: 'eq', value: rowKey },
        ],
        sort: order,
        offset: 0,
        limit: query.pageSize + 1,
        count: false,
        ...(after ? { after } : {}),
        signal: clientSignal(request, reply),
      });
      const more = rows.length > query.pageSize;
      if (more) rows.length = query.pageSize;
      const last = more ? rows[rows.length - 1] : undefined;
      const hidden = access?.hidden;
      return {
        items: hidden && hidden.size > 0 ? rows.map((r) => concealed(r, hidden)) : rows,
        pageSize: query.pageSize,
        next: last ? cursors.encode(scope, [last.id]) : null,
      };
    },
  };
}
