// The writes by key of one entity's generated routes: replace (PUT /{pk}), change (PATCH /{pk}, a
// JSON Merge Patch), change many at once (PATCH /) and delete (DELETE /{pk}). Create is create.ts.
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Row, WriteOptions } from '../mapper/repository.js';
import { allows, CrudOperations } from '../operations.js';
import { batchCompiler, MAX_BATCH_ROWS, readChanges, rowsSchema, sendBatchProblem } from './batch.js';
import { MERGE_PATCH, requireJson } from './body.js';
import { writeOptions } from './changes.js';
import { notFound } from './problems.js';
import { rowResponse, writeResponses } from './responses.js';
import { documented, type RouteContext } from './route-context.js';
import { batchPatchName, ifMatchHeaders, inputName, patchName, ref } from './schemas.js';

/** The write routes the entity's operations allow (create aside). */
export function writeRoutes(context: RouteContext): RouteOptions[] {
  const { entity, operations, repository, validation, requireIfMatch, pk, version, authz, common, keyOf, etag, condition, bodyOf, params } = context;
  const routes: RouteOptions[] = [];
  const conditional = version !== undefined || requireIfMatch;
  // PUT and PATCH answer alike: the row as stored (with its ETag), 404 without it, the same refusals.
  const rowWriteResponses = { 200: rowResponse(context, `The ${entity.name} as stored.`), ...writeResponses(context, true) };
  const writeByKey =
    (write: (key: unknown, body: Readonly<Record<string, unknown>>, options: WriteOptions) => Promise<Row | undefined>) =>
    async (request: FastifyRequest, reply: FastifyReply) => {
      const body = bodyOf(request, reply);
      if (!body || !authz.mayWrite(request, reply, body)) return reply;
      const call = authz.call(request, reply);
      const options = await condition(request, reply, call);
      if (!options) return reply;
      const row = await write(keyOf(request), body, { ...options, ...writeOptions(repository.recordsChanges, request, reply, call) });
      if (!row) return notFound(reply, entity, keyOf(request));
      if (etag) reply.header('etag', etag(row));
      return authz.shown(request, row);
    };
  if (allows(operations, CrudOperations.Update)) {
    routes.push({
      ...common,
      ...authz.guard(CrudOperations.Update, 'update'),
      method: 'PUT',
      url: `{${pk}}`,
      preValidation: requireJson,
      schema: documented({
        summary: `Replace the writable fields of a ${entity.name}`,
        params,
        ...(conditional ? { headers: ifMatchHeaders(entity, requireIfMatch) } : {}),
        body: ref(inputName(entity)),
        ...authz.schema(CrudOperations.Update),
        response: rowWriteResponses,
      }),
      handler: writeByKey((key, body, options) => repository.update(key, body, options)),
    });
  }
  if (allows(operations, CrudOperations.Patch)) {
    routes.push({
      ...common,
      ...authz.guard(CrudOperations.Patch, 'patch'),
      method: 'PATCH',
      url: `{${pk}}`,
      preValidation: requireJson,
      schema: documented({
        summary: `Change some fields of a ${entity.name} (JSON Merge Patch)`,
        description:
          'A JSON Merge Patch (RFC 7396, application/merge-patch+json; application/json is taken too): the fields it names change, null clears a nullable field, the others stay. A field holding JSON is replaced whole, not merged. An empty patch changes nothing and answers the row.',
        params,
        ...(conditional ? { headers: ifMatchHeaders(entity, requireIfMatch) } : {}),
        consumes: ['application/json', MERGE_PATCH],
        body: ref(patchName(entity)),
        ...authz.schema(CrudOperations.Patch),
        response: rowWriteResponses,
      }),
      handler: writeByKey((key, body, options) => repository.patch(key, body, options)),
    });
  }
  if (allows(operations, CrudOperations.Patch)) {
    const row = ref(batchPatchName(entity));
    routes.push({
      ...common,
      ...authz.guard(CrudOperations.Patch, 'patch'),
      validatorCompiler: batchCompiler(validation.compiler, row, false),
      method: 'PATCH',
      url: '',
      preValidation: requireJson,
      schema: documented({
        summary: `Change some fields of many ${entity.name} rows at once, all or none`,
        description: `An array of up to ${MAX_BATCH_ROWS} rows, each its ${pk}, the fields to change (a JSON Merge Patch: null clears a nullable field) ${version === undefined ? '' : `and the ${version} it was read at (checked as If-Match would: a row at another version fails the batch with 412 naming it)`}. One transaction: every row changes or none; a failing row is answered naming it ([3]) and nothing is written. The answer lists the stored rows in the order sent.${requireIfMatch ? ` Every row must carry its ${version ?? 'version'} (428 otherwise).` : ''}`,
        consumes: ['application/json', MERGE_PATCH],
        body: rowsSchema(row, false),
        ...authz.schema(CrudOperations.Patch),
        response: { 200: { description: `Every ${entity.name} as stored, in the order sent.`, type: 'array', items: ref(entity.name) }, ...writeResponses(context, true) },
      }),
      handler: async (request, reply) => {
        const changes = readChanges(entity, reply, request.body as Record<string, unknown>[], requireIfMatch);
        if (!changes) return reply;
        // A row writing what the caller may not is a 403 naming it; a row outside the scope is missing (404 naming it): nothing written.
        if (!authz.mayWriteRows(request, reply, changes.map((c) => c.patch))) return reply;
        try {
          const rows = await repository.patchMany(changes, writeOptions(repository.recordsChanges, request, reply, authz.call(request, reply)));
          return authz.accessOf ? rows.map((r) => authz.shown(request, r)) : rows;
        } catch (err) {
          return sendBatchProblem(reply, entity, err, changes.map((c) => c.key));
        }
      },
    });
  }
  if (allows(operations, CrudOperations.Delete)) {
    routes.push({
      ...common,
      ...authz.guard(CrudOperations.Delete, 'delete'),
      method: 'DELETE',
      url: `{${pk}}`,
      schema: documented({
        summary: entity.softDelete ? `Delete a ${entity.name} (soft: it disappears from every read)` : `Delete a ${entity.name}`,
        params,
        ...(conditional ? { headers: ifMatchHeaders(entity, requireIfMatch) } : {}),
        ...authz.schema(CrudOperations.Delete),
        response: { 204: { description: 'Deleted.', type: 'null' }, ...writeResponses(context, false) },
      }),
      handler: async (request, reply) => {
        const call = authz.call(request, reply);
        const options = await condition(request, reply, call);
        if (!options) return reply;
        if (!(await repository.delete(keyOf(request), { ...options, ...writeOptions(repository.recordsChanges, request, reply, call) }))) return notFound(reply, entity, keyOf(request));
        return reply.code(204).send();
      },
    });
  }
  return routes;
}
