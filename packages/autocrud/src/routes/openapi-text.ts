// The prose of the generated routes' OpenAPI document: every operation's summary and description,
// and the descriptions of their answers and headers, by route. Kept in one file so that the
// document reads as one voice and a wording change is one diff; the route files hold only schemas
// and handlers, and take their text from here.
import type { Entity } from '../entity.js';
import { MAX_ALTERNATIVES } from '../mapper/sql/query.js';
import type { FilterOperator } from '../mapper/sql/query.js';
import {
  DEFAULT_INCLUDE_LIMIT,
  MAX_BATCH_ROWS,
  MAX_INCLUDE_LIMIT,
  MAX_LIST_VALUES,
  MAX_NESTED_ROWS,
} from './limits.js';

// Completes "Rows whose <field> ..." in each filter parameter's description.
const OPERATOR_TEXT: Readonly<Record<FilterOperator, string>> = {
  eq: 'is equal to this value',
  ne: 'is not equal to this value',
  gt: 'is greater than this value',
  gte: 'is greater than or equal to this value',
  lt: 'is less than this value',
  lte: 'is less than or equal to this value',
  like: 'contains this text (case-sensitive; % and _ match themselves)',
  ilike:
    'contains this text in any case (Unicode lower case: É matches é, ß does not match SS; % and _ match themselves)',
  in: `is one of these values (comma-separated, at most ${MAX_LIST_VALUES})`,
  nin: `is none of these values (comma-separated, at most ${MAX_LIST_VALUES})`,
  null: 'is NULL (true) or is not NULL (false)',
};

/** The page size an answer says it used: the list's and the history's. */
const PAGE_SIZE_IN_EFFECT = 'The page size in effect (the requested one, capped).';

/**
 * The prose of each generated route, by route: summaries, descriptions, and the descriptions of
 * answers and headers.
 *
 * @example
 * ```ts
 * const schema = { summary: openapiText.get.summary(entity), params };
 * ```
 */
export const openapiText = {
  list: {
    summary: (entity: Entity) => `List ${entity.name} rows, a page at a time`,
    description: `Filters: filter[field]=value or filter[field][op]=value with op one of eq, ne, gt, gte, lt, lte, like, ilike, in, nin, null; all must hold. An OR group: filter[or][n][field][op]=value with n from 0 to ${MAX_ALTERNATIVES - 1}; a row must also match all conditions of at least one alternative n. Paging: page and pageSize, or after=<the next of the previous page> (a cursor: keyset paging). fields=a,b answers only those fields.`,
  },
  listAll: {
    summary: (entity: Entity) => `Every ${entity.name} row, unpaged`,
  },
  get: {
    summary: (entity: Entity) => `Get one ${entity.name}`,
    ok: (entity: Entity) => `The ${entity.name}.`,
    notModified: 'Not modified: the ETag in If-None-Match is current.',
  },
  /** PUT and PATCH answer alike: the row as stored. */
  writeByKey: {
    ok: (entity: Entity) => `The ${entity.name} as stored.`,
  },
  replace: {
    summary: (entity: Entity) => `Replace the writable fields of a ${entity.name}`,
  },
  patch: {
    summary: (entity: Entity) => `Change some fields of a ${entity.name} (JSON Merge Patch)`,
    description:
      'A JSON Merge Patch (RFC 7396, application/merge-patch+json; application/json is taken too): the fields it names change, null clears a nullable field, the others stay. A field holding JSON is replaced whole, not merged. An empty patch changes nothing and answers the row.',
  },
  bulkPatch: {
    summary: (entity: Entity) =>
      `Change some fields of many ${entity.name} rows at once, all or none`,
    description: (entity: Entity, requireIfMatch: boolean) =>
      `An array of up to ${MAX_BATCH_ROWS} rows, each its ${entity.primaryKey}, the fields to change (a JSON Merge Patch: null clears a nullable field) ${entity.version === undefined ? '' : `and the ${entity.version} it was read at (checked as If-Match would: a row at another version fails the batch with 412 naming it)`}. One transaction: every row changes or none; a failing row is answered naming it ([3]) and nothing is written. The answer lists the stored rows in the order sent.${requireIfMatch ? ` Every row must carry its ${entity.version ?? 'version'} (428 otherwise).` : ''}`,
    ok: (entity: Entity) => `Every ${entity.name} as stored, in the order sent.`,
  },
  delete: {
    summary: (entity: Entity) =>
      entity.softDelete
        ? `Delete a ${entity.name} (soft: it disappears from every read)`
        : `Delete a ${entity.name}`,
    noContent: 'Deleted.',
  },
  create: {
    summary: (entity: Entity, idempotent: boolean) =>
      `Create a ${entity.name}, or many at once${idempotent ? ' (at most once per Idempotency-Key)' : ''}`,
    description: (entity: Entity) => {
      const keys = entity.unique.map((k) => `(${k.join(', ')})`).join(', ');
      return (
        `One ${entity.name} as an object, or up to ${MAX_BATCH_ROWS} as an array: all of them in one transaction or none (a bad row is answered naming it, [3].price, and nothing is written); the answer lists the created rows in the order sent. ` +
        `An object may carry the rows of its one-to-many relations (up to ${MAX_NESTED_ROWS} in all, one level): created with it in the same transaction, a bad one named lines[3].quantity. ` +
        (entity.unique.length > 0
          ? `Prefer: resolution=merge-duplicates makes it an upsert on the unique key ${keys.split(', (')[0] as string}: a row whose key is taken updates that row (the fields it brings); resolution=ignore-duplicates leaves that row as it is. The answer is 201 when every row was created, else 200, with Preference-Applied and Kit-Row-Outcomes (created, updated or unchanged per row, in order).`
          : `${entity.name} declares no unique key, so Prefer: resolution=... is refused (400).`)
      );
    },
    created: (entity: Entity, idempotent: boolean) =>
      `The ${entity.name} as stored (with its children, for a nested create), Location naming it. For an array body (or an upsert of one): every ${entity.name} as stored, in the order sent, as a JSON array (no Location, no ETag).${idempotent ? ' A replay of an earlier request with the same Idempotency-Key carries Idempotent-Replayed: true.' : ''}`,
    upserted: (entity: Entity) =>
      `An upsert that updated (or left) an existing ${entity.name}: the row as stored; for an array body, every row as stored, in the order sent, as a JSON array.`,
    replayed:
      'true when this is the stored answer of an earlier request with the same Idempotency-Key.',
    preferenceApplied: 'The resolution an upsert applied.',
    rowOutcomes: 'An upsert: created, updated or unchanged for each row, in order.',
    prefer:
      'resolution=merge-duplicates or resolution=ignore-duplicates: an upsert on the unique key (other preferences are ignored).',
    onConflict: (entity: Entity) =>
      `With Prefer: resolution=..., the unique key rows are matched on, its fields comma-separated in any order: ${entity.unique.map((k) => k.join(',')).join(' or ')}. Default: ${(entity.unique[0] as readonly string[]).join(',')}.`,
    conflictOrPending:
      'A unique or foreign-key constraint; or a request with the same Idempotency-Key is still in progress (Retry-After).',
  },
  history: {
    summary: (entity: Entity) => `The change history of a ${entity.name}, newest first`,
    description:
      "Every recorded write of the row (create, update, patch, delete, softDelete), including after it was deleted: which fields changed, from what to what (sensitive fields are listed without values), the versions, the database's time, and the request's correlation id, subject and trace id. A row with no recorded change answers an empty page. Paging: pageSize, and after=<the next of the previous page>.",
    ok: 'The changes, newest first.',
    pageSize: PAGE_SIZE_IN_EFFECT,
    next: 'The cursor of the next (older) page: pass it as `after`; null exactly when no change follows.',
    pageSizeParameter: (maxPageSize: number) => `Changes per page (at most ${maxPageSize}).`,
    afterParameter: 'The `next` of the previous page.',
  },
  nested: {
    summary: (parent: Entity, child: Entity) =>
      `List the ${child.name} rows of one ${parent.name}, a page at a time`,
    description: (parent: Entity, child: Entity, field: string) =>
      `The ${child.name} list (its filters, sort, paging, cursors, fields and include) restricted to the rows whose ${field} is this ${parent.name}'s ${parent.primaryKey}. 404 when the ${parent.name} does not exist or was deleted.`,
  },
  /** The query and path parameters of the routes. */
  parameters: {
    key: (entity: Entity, pk: string) => `The ${entity.name}'s ${pk}.`,
    page: (maxPageNumber: number) =>
      `The page, from 1 (at most ${maxPageNumber}); the first when left out. Not with after.`,
    pageSize: (defaultPageSize: number, maxPageSize: number) =>
      `Rows per page (default ${defaultPageSize}); above ${maxPageSize} it is ${maxPageSize}.`,
    after:
      'A cursor: the `next` of the previous page, unchanged. The page holds the rows after it in the same order (keyset paging: stable while rows are inserted or deleted before it, and as fast deep in the list as at its start). Use with the same sort and filters; not with page.',
    count:
      'Count the rows the filters match (`total`, `totalPages`). `false` skips the count, which on a large table costs more than the page.',
    sort: (sortable: readonly string[]) =>
      `Sort keys, comma-separated, each a field optionally prefixed with - for descending: ${sortable.join(', ')}.`,
    filter: (field: string, op: FilterOperator) => `Rows whose ${field} ${OPERATOR_TEXT[op]}.`,
    alternative: (alternative: number, field: string, op: FilterOperator) =>
      `In alternative ${alternative} of the OR group (rows match all conditions of at least one alternative): rows whose ${field} ${OPERATOR_TEXT[op]}.`,
    fields: (entity: Entity, names: readonly string[]) =>
      `Answer only these fields of each ${entity.name}, comma-separated: ${names.join(', ')}. The ETag is still the row's version.`,
    include: (entity: Entity, names: readonly string[]) =>
      `Related rows to answer with each ${entity.name}, comma-separated (or the parameter repeated): ${names.join(', ')}. A one-to-many relation answers at most ${DEFAULT_INCLUDE_LIMIT} rows per ${entity.name} (limit[path], at most ${MAX_INCLUDE_LIMIT}), the first by primary key, and sets <relation>Cut: true when there were more. A many-to-one relation whose row is missing or deleted answers null.`,
    includeFields: (path: string, included: Entity) =>
      `With include=${path}: answer only these fields of each ${included.name} it includes, comma-separated: ${included.fields.map((f) => f.name).join(', ')}.`,
    includeLimit: (path: string, included: Entity) =>
      `With include=${path}: at most this many ${included.name} rows per parent (default ${DEFAULT_INCLUDE_LIMIT}).`,
  },
  /** The request and answer headers of the routes. */
  headers: {
    idempotencyKey:
      'Makes the create happen at most once: a retry with the same key and body answers the first result (Idempotent-Replayed: true) and creates nothing; the same key with another body is 422; while the first request runs, 409 with Retry-After. Keys are kept for a day by default.',
    ifMatch: (entity: Entity, required: boolean) =>
      `The ETag of the ${entity.name} as read (GET answers it): the write happens only while the row is at that version, else 412 and nothing changes.${required ? ' Required: without it the write is 428.' : ''}`,
    ifNoneMatch: (entity: Entity) =>
      `An ETag of the ${entity.name} the client holds: 304 (no body) while it is current.`,
    etag: (entity: Entity) => `The ${entity.name}'s version, for If-Match and If-None-Match.`,
    retryAfter: 'Seconds to wait before retrying.',
    currentVersion: 'The current version.',
  },
  /** The bodies the routes take and the shapes they answer. */
  schemas: {
    defaulted: (said: string, value: unknown) =>
      `${said}Default when left out: ${JSON.stringify(value)}.`,
    input: (entity: Entity) => `The fields of ${entity.name} a client writes.`,
    patch: (entity: Entity) =>
      `A JSON Merge Patch of a ${entity.name}: the fields it names change (null clears a nullable one), the others stay as they are.`,
    batchVersion:
      'The version the row was read at (its ETag): the row is written only while it is still at it.',
    batchPatch: (entity: Entity, pk: string, version: string | undefined) =>
      `One ${entity.name} of a bulk PATCH: its ${pk}, the fields to change (a JSON Merge Patch)${version ? `, and the ${version} it was read at` : ''}.`,
    nestedChild: (child: Entity, field: string) =>
      `A ${child.name} created with its parent (${field} is the new parent's key).`,
    nestedRows: (child: Entity) =>
      `${child.name} rows created with it, in the same transaction (at most ${MAX_NESTED_ROWS} children in all).`,
    nestedCreated: (child: Entity) =>
      `The ${child.name} rows created with it, as stored, in the order sent (only on the answer of a create that carried them).`,
    relatedOne: (name: string, related: Entity) =>
      `With include=${name}: the ${related.name} (null when it is missing or deleted).`,
    relatedMany: (name: string, related: Entity) =>
      `With include=${name}: its ${related.name} rows, the first by primary key, at most the include's limit.`,
    relatedCut: (name: string, related: Entity) =>
      `With include=${name}: true when it has more ${related.name} rows than ${name} holds.`,
    total: 'Rows matching the filters, on all pages (absent with count=false).',
    page: 'The page number (absent on a cursor page).',
    pageSize: PAGE_SIZE_IN_EFFECT,
    totalPages: 'Absent with count=false.',
    next: 'The cursor of the next page (pass it as `after`); null exactly when no row follows this page.',
  },
  /** The problem answers in the document. */
  problems: {
    correlationId:
      "The request's correlation id, as in the correlation header (X-Correlation-Id by default); absent only on a path the audit trail excludes.",
    errors: 'For 400: the parameters at fault.',
    errorName: 'The query or path parameter, or the body field.',
    errorPointer: 'A JSON pointer into that part of the request.',
    missingReference:
      'A field names a row that does not exist or is deleted; `errors` names it (`customerId`, `[3].customerId`, `lines[3].productId`), and nothing was written.',
    /** Joins the descriptions of one status's several causes. */
    or: ' Or: ',
    byStatus: {
      400: 'A parameter or the body is not valid; `errors` names it.',
      403: "The token's roles do not allow this operation, or its claims cannot scope it; nothing was read or written.",
      404: 'No such row (or it was deleted).',
      409: 'The write conflicts with a unique or foreign-key constraint.',
      412: 'If-Match named another version: the row changed since it was read, and nothing was written. ETag is the current version.',
      422: 'The Idempotency-Key was used for another body; nothing was created.',
      428: 'The write needs If-Match: the ETag of the row as read.',
      503: 'The database is unavailable or busy; retry after `Retry-After` seconds.',
      504: 'The statement ran longer than the service allows and was cancelled; nothing of it was written.',
    },
  },
} as const;
