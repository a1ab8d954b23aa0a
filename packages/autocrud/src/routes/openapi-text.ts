// The prose of the generated routes' OpenAPI document: every operation's summary and description,
// and the descriptions of their answers and headers, by route. Kept in one file so that the
// document reads as one voice and a wording change is one diff; the route files hold only schemas
// and handlers, and take their text from here.
import type { Entity } from '../entity.js';
import { MAX_ALTERNATIVES } from '../mapper/sql/query.js';
import { MAX_BATCH_ROWS } from './batch.js';
import { MAX_NESTED_ROWS } from './nested-create.js';

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
    pageSize: 'The page size in effect (the requested one, capped).',
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
} as const;
