// The generated POST: one row, many (an array, all or none), a row with its children (a nested
// create, all or none), and, with `Prefer: resolution=merge-duplicates` or `ignore-duplicates`
// (PostgREST's spelling), an upsert on the entity's unique key. Every answer says what it did.
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Entity } from '../entity.js';
import type { CallOptions, Row, UpsertedRow, UpsertResolution } from '../mapper/repository.js';
import { CrudOperations } from '../operations.js';
import { admit, forbiddenWrite, refuse, withReferences, type RouteAuthorization } from './authorize.js';
import type { RelationsOf } from './includes.js';
import { visible } from './fields.js';
import { readBody, requireJson } from './body.js';
import { batchCompiler, MAX_BATCH_ROWS, readRows, rowsSchema, sendBatchProblem } from './batch.js';
import { IDEMPOTENCY_HEADER, idempotentCreate, sendCreated, type CreatedAnswer } from './idempotency.js';
import { MAX_NESTED_ROWS, type NestedRelations } from './nested-create.js';
import { badRequest, type InvalidParameter } from './problems.js';
import { routeResponses } from './responses.js';
import { etagHeader, idempotencyHeaders, inputName, problemResponse, ref, RETRY_AFTER_HEADER, unprocessableResponse } from './schemas.js';
import type { CrudRepository, CrudRouteSettings } from './settings.js';
import { writeOptions } from './changes.js';

const UPSERT_HEADERS = {
  'Preference-Applied': { type: 'string', description: 'The resolution an upsert applied.' },
  'Kit-Row-Outcomes': { type: 'string', description: 'An upsert: created, updated or unchanged for each row, in order.' },
};

/** The header that lists, for an upsert, what happened to each row in order. */
export const OUTCOMES_HEADER = 'kit-row-outcomes';

const RESOLUTIONS: Readonly<Record<string, UpsertResolution>> = { 'merge-duplicates': 'merge', 'ignore-duplicates': 'ignore' };

/** The `resolution` preference of `Prefer` (RFC 7240: other preferences, and unknown values, are ignored). */
export function resolutionOf(header: string | string[] | undefined): { token: string; resolution: UpsertResolution } | undefined {
  if (header === undefined) return undefined;
  for (const part of (Array.isArray(header) ? header.join(',') : header).split(/[,;]/)) {
    const [name, value] = part.split('=').map((s) => s.trim().toLowerCase());
    if (name === 'resolution' && value !== undefined) {
      const resolution = RESOLUTIONS[value.replace(/^"(.*)"$/, '$1')];
      if (resolution) return { token: `resolution=${value}`, resolution };
    }
  }
  return undefined;
}

/** The POST route of one entity. */
export function createRoute(
  settings: CrudRouteSettings,
  common: Partial<RouteOptions>,
  nested: NestedRelations,
  etag: ((row: Row) => string) | undefined,
  authz: RouteAuthorization,
): RouteOptions {
  const { entity, repository, validation, prefix, idempotency } = settings;
  const pk = entity.primaryKey;
  const version = entity.version;
  const input = ref(inputName(entity));
  // The single-row body and the 201 answer: completed with the children when they are linked.
  const singleBody = ref(inputName(entity));
  const location = (row: Row) => `${prefix}/${encodeURIComponent(String(row[pk]))}`;
  const created = (row: Row, shown: Row = row): CreatedAnswer => ({ location: location(row), etag: etag?.(row), row: shown });
  const outcomes = (rows: readonly UpsertedRow[], token: string, single: boolean): CreatedAnswer => {
    const headers = { 'preference-applied': token, [OUTCOMES_HEADER]: rows.map((r) => r.outcome).join(', ') };
    const status = rows.every((r) => r.outcome === 'created') ? 201 : 200;
    if (!single) return { status, location: undefined, etag: undefined, row: rows.map((r) => r.row), headers };
    const { row, outcome } = rows[0] as UpsertedRow;
    return { status, location: outcome === 'created' ? location(row) : undefined, etag: etag?.(row), row, headers };
  };
  const created201: Record<string, unknown> = {
    description: `The ${entity.name} as stored (with its children, for a nested create), Location naming it. For an array body (or an upsert of one): every ${entity.name} as stored, in the order sent, as a JSON array (no Location, no ETag).${idempotency ? ' A replay of an earlier request with the same Idempotency-Key carries Idempotent-Replayed: true.' : ''}`,
    headers: {
      Location: { type: 'string' },
      ...(version === undefined ? {} : etagHeader(entity)),
      ...(idempotency ? { 'Idempotent-Replayed': { type: 'string', enum: ['true', 'false'], description: 'true when this is the stored answer of an earlier request with the same Idempotency-Key.' } } : {}),
      ...(entity.unique.length > 0 ? UPSERT_HEADERS : {}),
    },
    ...ref(entity.name),
  };
  nested.document(singleBody, created201);
  const keys = entity.unique.map((k) => `(${k.join(', ')})`).join(', ');
  return {
    ...common,
    validatorCompiler: batchCompiler(validation.compiler, input, (validateRow) => nested.validator(validateRow)),
    method: 'POST',
    url: '',
    preValidation: requireJson,
    schema: {
      summary: `Create a ${entity.name}, or many at once${idempotency ? ' (at most once per Idempotency-Key)' : ''}`,
      description:
        `One ${entity.name} as an object, or up to ${MAX_BATCH_ROWS} as an array: all of them in one transaction or none (a bad row is answered naming it, [3].price, and nothing is written); the answer lists the created rows in the order sent. ` +
        `An object may carry the rows of its one-to-many relations (up to ${MAX_NESTED_ROWS} in all, one level): created with it in the same transaction, a bad one named lines[3].quantity. ` +
        (entity.unique.length > 0
          ? `Prefer: resolution=merge-duplicates makes it an upsert on the unique key ${keys.split(', (')[0] as string}: a row whose key is taken updates that row (the fields it brings); resolution=ignore-duplicates leaves that row as it is. The answer is 201 when every row was created, else 200, with Preference-Applied and Kit-Row-Outcomes (created, updated or unchanged per row, in order).`
          : `${entity.name} declares no unique key, so Prefer: resolution=... is refused (400).`),
      // Only where it says something: a headers schema is one more validation on every create.
      ...(idempotency || entity.unique.length > 0
        ? {
            headers: {
              type: 'object',
              properties: {
                ...(idempotency ? (idempotencyHeaders() as { properties: Record<string, unknown> }).properties : {}),
                ...(entity.unique.length > 0 ? { prefer: { type: 'string', description: 'resolution=merge-duplicates or resolution=ignore-duplicates: an upsert on the unique key (other preferences are ignored).' } } : {}),
              },
            },
          }
        : {}),
      ...(entity.unique.length > 0
        ? {
            querystring: {
              type: 'object',
              properties: {
                [ON_CONFLICT]: {
                  type: 'string',
                  maxLength: 1000,
                  description: `With Prefer: resolution=..., the unique key rows are matched on, its fields comma-separated in any order: ${entity.unique.map((k) => k.join(',')).join(' or ')}. Default: ${(entity.unique[0] as readonly string[]).join(',')}.`,
                },
              },
            },
          }
        : {}),
      body: { anyOf: [singleBody, rowsSchema(input, false)] },
      ...authz.schema(CrudOperations.Create),
      // The answers are typed as one row (with its children, for a nested create): that is what a
      // generated client reads from a create (`data.id`). An anyOf with the array answer made every
      // single create's `data` a union that does not compile without narrowing; the array answer is
      // described instead (docs/decisions.md).
      response: {
        201: created201,
        ...(entity.unique.length > 0
          ? {
              200: {
                description: `An upsert that updated (or left) an existing ${entity.name}: the row as stored; for an array body, every row as stored, in the order sent, as a JSON array.`,
                headers: { ...UPSERT_HEADERS, ...(version === undefined ? {} : etagHeader(entity)) },
                ...ref(entity.name),
              },
            }
          : {}),
        400: problemResponse(400),
        409: idempotency
          ? problemResponse(409, { description: 'A unique or foreign-key constraint; or a request with the same Idempotency-Key is still in progress (Retry-After).', headers: RETRY_AFTER_HEADER })
          : problemResponse(409),
        ...unprocessableResponse(entity, Boolean(idempotency)),
        ...routeResponses(authz),
      },
    } as RouteOptions['schema'],
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      const key = request.headers[IDEMPOTENCY_HEADER];
      const call = authz.call(request, reply);
      const preference = request.headers.prefer === undefined ? undefined : resolutionOf(request.headers.prefer);
      if (preference && entity.unique.length === 0) {
        return badRequest(reply, { in: 'headers', name: 'Prefer', detail: `asks for ${preference.token}, but ${entity.name} declares no unique key to match rows on (defineEntity({ unique: [[...]] })); nothing was written` });
      }
      const conflict = conflictKey(entity, (request.query as Record<string, unknown> | undefined)?.[ON_CONFLICT], preference);
      if ('fault' in conflict) return badRequest(reply, conflict.fault);
      const plan = await planCreate(request, reply, entity, repository, nested, preference && { ...preference, key: conflict.key }, call, created, outcomes, authz, settings.relations);
      if (!plan) return reply;
      // One row: the route's compiled serializer (its 201 is the row's schema). Many rows or a
      // tree: the mapper's JSON values as they are (the row's serializer would drop the children).
      if (plan.serializeAsJson) reply.serializer(asJson).type('application/json; charset=utf-8');
      const create = plan.create;
      try {
        if (idempotency && typeof key === 'string') return await idempotentCreate(request, reply, idempotency, { entity, prefix, key, body: plan.body, extra: plan.extra }, create);
        return sendCreated(reply, await create());
      } catch (err) {
        return sendBatchProblem(reply, entity, err, undefined, nested.entities);
      }
    },
  };
}

/** The query parameter naming the unique key an upsert matches rows on (PostgREST's spelling). */
const ON_CONFLICT = 'on_conflict';

/**
 * The unique key an upsert matches on: `on_conflict`'s fields (in any order) naming one of the
 * entity's unique keys, else its first. A 400 when it names no declared key, or comes without a
 * `Prefer: resolution=...` (it would be silently ignored).
 */
function conflictKey(entity: Entity, given: unknown, preference: unknown): { key: readonly string[] } | { fault: InvalidParameter } {
  const first = (entity.unique[0] ?? []) as readonly string[];
  if (given === undefined) return { key: first };
  const fault = (detail: string) => ({ fault: { in: 'querystring' as const, name: ON_CONFLICT, detail } });
  if (entity.unique.length === 0) return fault(`names a unique key, but ${entity.name} declares none; nothing was written`);
  if (preference === undefined) return fault('applies to an upsert: send Prefer: resolution=merge-duplicates or resolution=ignore-duplicates with it; nothing was written');
  const fields = typeof given === 'string' ? given.split(',').map((f) => f.trim()) : [];
  const wanted = [...fields].sort().join(',');
  const key = entity.unique.find((k) => [...k].sort().join(',') === wanted);
  if (!key) return fault(`must name one unique key of ${entity.name}, its fields comma-separated: ${entity.unique.map((k) => k.join(',')).join(' or ')}; nothing was written`);
  return { key };
}

/** Rows are JSON values already (the mapper's answer); a problem body arrives as text. */
function asJson(payload: unknown): string {
  return typeof payload === 'string' ? payload : JSON.stringify(payload);
}

interface CreatePlan {
  readonly body: Record<string, unknown> | Record<string, unknown>[];
  /** What else the idempotency fingerprint covers. */
  readonly extra: unknown;
  readonly serializeAsJson: boolean;
  readonly create: () => Promise<CreatedAnswer>;
}

/**
 * What the request asks for, its body in Kit's form; `undefined` once a 400 (or, under
 * authorization, a 403 naming the row or child that writes what the caller may not) is sent.
 */
async function planCreate(
  request: FastifyRequest,
  reply: FastifyReply,
  entity: Entity,
  repository: CrudRepository,
  nested: NestedRelations,
  preference: { token: string; resolution: UpsertResolution; key: readonly string[] } | undefined,
  call: CallOptions,
  created: (row: Row, shown?: Row) => CreatedAnswer,
  outcomes: (rows: readonly UpsertedRow[], token: string, single: boolean) => CreatedAnswer,
  authz: RouteAuthorization,
  relationsOf: RelationsOf,
): Promise<CreatePlan | undefined> {
  const given = request.body as Record<string, unknown> | Record<string, unknown>[];
  const shown = (row: Row) => authz.shown(request, row);
  // The caller's scope and, when the entity records its changes, the request's ChangeContext.
  const options = writeOptions(repository.recordsChanges, request, reply, call);
  const upsert = (rows: Record<string, unknown>[], single: boolean) => {
    const { token, resolution, key } = preference as { token: string; resolution: UpsertResolution; key: readonly string[] };
    for (let i = 0; i < rows.length; i++) {
      const missing = key.find((name) => (rows[i] as Record<string, unknown>)[name] === undefined || (rows[i] as Record<string, unknown>)[name] === null);
      if (missing !== undefined) {
        badRequest(reply, { in: 'body', name: single ? missing : `[${i}].${missing}`, detail: `is required for an upsert: it is part of the unique key (${key.join(', ')}) rows are matched on` });
        return undefined;
      }
    }
    if (!authz.mayWriteRows(request, reply, rows, single ? () => '' : undefined)) return undefined;
    // The key is part of what an Idempotency-Key covers: the same rows matched on another key are another request.
    const extra = key === entity.unique[0] ? resolution : { resolution, key };
    return {
      body: single ? (rows[0] as Record<string, unknown>) : rows,
      extra,
      serializeAsJson: true,
      create: async () => outcomes((await repository.upsertMany(rows, { resolution, key, ...options })).map((r) => ({ row: shown(r.row), outcome: r.outcome })), token, single),
    };
  };
  if (Array.isArray(given)) {
    const rows = readRows(entity, reply, given);
    if (!rows) return undefined;
    if (preference) return upsert(rows, false);
    // Every row is the caller's: a row naming another owner (or a field the caller may not write) is a 403 naming it, nothing written.
    if (!authz.mayWriteRows(request, reply, rows)) return undefined;
    return { body: rows, extra: undefined, serializeAsJson: true, create: async () => ({ location: undefined, etag: undefined, row: (await repository.createMany(rows, options)).map(shown) }) };
  }
  const relations = nested.carried(given);
  if (relations.length > 0) {
    if (preference) {
      badRequest(reply, { in: 'headers', name: 'Prefer', detail: `asks for ${preference.token}, which does not apply to a create that carries ${relations.join(', ')} (a nested create only creates); nothing was written` });
      return undefined;
    }
    const tree = nested.read(reply, given, relations);
    if (!tree) return undefined;
    if (!authz.mayWrite(request, reply, tree.values)) return undefined;
    // Each child is created under the caller's rule for its own entity's create: its scope sets its owner, its hidden fields leave the answer.
    const hiddenChildren = new Map<string, ReadonlySet<string>>();
    for (const name of relations) {
      const child = tree.children[name];
      if (!child?.authorization) continue;
      const admitted = await admit(child.entity, child.authorization, CrudOperations.Create, 'create', request);
      if ('status' in admitted) {
        refuse(reply, admitted.status === 403 ? { ...admitted, detail: `${name}: ${admitted.detail}` } : admitted);
        return undefined;
      }
      // The rows a child may reference are the caller's too (the parent link is set by the create).
      const access = await withReferences(request, child.entity, admitted, relationsOf);
      for (let i = 0; i < child.rows.length; i++) {
        const refused = forbiddenWrite(child.entity, access, child.rows[i] as Record<string, unknown>);
        if (refused) {
          refuse(reply, { status: 403, detail: `${name}[${i}]: ${refused}` });
          return undefined;
        }
      }
      if (access.scope) tree.children[name] = { ...child, scope: access.scope };
      if (access.hidden.size > 0) hiddenChildren.set(name, access.hidden);
    }
    const extra = Object.fromEntries(relations.map((name) => [name, tree.children[name]?.rows]));
    const shownTree = (row: Row): Row => {
      const out = shown(row);
      for (const [name, hidden] of hiddenChildren) if (Array.isArray(row[name])) out[name] = (row[name] as Row[]).map((r) => visible(r, hidden));
      return out;
    };
    return { body: tree.values, extra, serializeAsJson: true, create: async () => {
      // A child table may record its changes when the parent's does not: the context always goes with a tree.
      const row = await repository.createTree(tree.values, tree.children, writeOptions(true, request, reply, call));
      return created(row, shownTree(row));
    } };
  }
  const read = readBody(entity, given);
  if ('fault' in read) {
    badRequest(reply, read.fault);
    return undefined;
  }
  const row = read.values;
  if (preference) return upsert([row], true);
  if (!authz.mayWrite(request, reply, row)) return undefined;
  // A replay answers what was stored: the row as this caller saw it (keys are the caller's own).
  return { body: row, extra: undefined, serializeAsJson: false, create: async () => {
    const stored = await repository.create(row, options);
    return created(stored, shown(stored));
  } };
}
