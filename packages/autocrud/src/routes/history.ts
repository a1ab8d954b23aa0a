// GET /{pk}/history: a row's changes from Kit's change history, newest first, a page at a time
// with the list's signed cursors. The history is read through the history entity's repository
// (a keyset list); no SQL here.
import type { FastifyReply, FastifyRequest, FastifySchema, RouteOptions } from 'fastify';
import type { Entity } from '../entity.js';
import { ChangeHistory } from '../mapper/history.js';
import { clientSignal } from './abort.js';
import { MAX_CURSOR_LENGTH, type CursorCodec } from './cursor.js';
import type { ListRepository } from './list.js';
import { badRequest } from './problems.js';
import { keyParams, problemResponse, ref, type PageLimits } from './schemas.js';

/** Everything the history route is made from. */
export interface HistorySettings {
  readonly entity: Entity;
  readonly limits: PageLimits;
  /** The history entity's repository. */
  readonly history: ListRepository;
  readonly cursors: CursorCodec;
  /** The row's key in Kit's form, from the request. */
  readonly keyOf: (request: FastifyRequest) => unknown;
}

const NEWEST_FIRST = [{ field: 'id', descending: true }] as const;

/** The page answer: the KitChange component's rows. */
function historyPage(): Record<string, unknown> {
  return {
    description: 'The changes, newest first.',
    type: 'object',
    required: ['items', 'pageSize', 'next'],
    properties: {
      items: { type: 'array', items: ref(ChangeHistory.name) },
      pageSize: { type: 'integer', description: 'The page size in effect (the requested one, capped).' },
      next: { type: ['string', 'null'], description: 'The cursor of the next (older) page: pass it as `after`; null exactly when no change follows.' },
    },
  };
}

/** The route options of `GET /{pk}/history`, relative to the group. */
export function historyRoute(settings: HistorySettings, common: Partial<RouteOptions>): RouteOptions {
  const { entity, limits, history, cursors, keyOf } = settings;
  const order = history.order([...NEWEST_FIRST]);
  return {
    ...common,
    method: 'GET',
    url: `{${entity.primaryKey}}/history`,
    schema: {
      summary: `The change history of a ${entity.name}, newest first`,
      description: `Every recorded write of the row (create, update, patch, delete, softDelete), including after it was deleted: which fields changed, from what to what (sensitive fields are listed without values), the versions, the database's time, and the request's correlation id, subject and trace id. A row with no recorded change answers an empty page. Paging: pageSize, and after=<the next of the previous page>.`,
      params: keyParams(entity),
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: {
          pageSize: { type: 'integer', minimum: 1, maximum: limits.maxPageSize, default: limits.defaultPageSize, description: `Changes per page (at most ${limits.maxPageSize}).` },
          after: { type: 'string', minLength: 1, maxLength: MAX_CURSOR_LENGTH, description: 'The `next` of the previous page.' },
        },
      },
      response: { 200: historyPage(), 400: problemResponse(400), 503: problemResponse(503), 504: problemResponse(504) },
    } as FastifySchema,
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      const query = request.query as { pageSize: number; after?: string };
      const rowKey = String(keyOf(request));
      const scope = `${ChangeHistory.table}\u0001${entity.name}\u0001${rowKey}`;
      let after: unknown[] | undefined;
      if (query.after !== undefined) {
        after = cursors.decode(scope, query.after);
        if (!after || after.length !== 1 || !Number.isSafeInteger(after[0])) {
          return badRequest(reply, { in: 'querystring', name: 'after', detail: 'is not a cursor this history issued for this row: pass the `next` of the previous page unchanged' });
        }
      }
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
      return { items: rows, pageSize: query.pageSize, next: last ? cursors.encode(scope, [last.id]) : null };
    },
  };
}
