// PATCH / : change some fields of many rows at once, all or none.
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { CrudOperations } from '../../operations.js';
import { batchCompiler, readChanges, rowsSchema, sendBatchProblem } from '../batch.js';
import { MERGE_PATCH, requireJson } from '../body.js';
import { writeOptions } from '../changes.js';
import { openapiText } from '../openapi-text.js';
import { writeResponses } from '../responses.js';
import { documented, type WriteContext } from '../route-context.js';
import { batchPatchName, ref } from '../schemas.js';
import type { CrudRouteSettings } from '../settings.js';

function bulkPatchSchema(
  context: WriteContext,
  row: Record<string, unknown>,
): Record<string, unknown> {
  const { entity, authz, requireIfMatch } = context;
  return {
    summary: openapiText.bulkPatch.summary(entity),
    description: openapiText.bulkPatch.description(entity, requireIfMatch),
    consumes: ['application/json', MERGE_PATCH],
    body: rowsSchema(row, false),
    ...authz.schema(CrudOperations.Patch),
    response: {
      200: {
        description: openapiText.bulkPatch.ok(entity),
        type: 'array',
        items: ref(entity.name),
      },
      ...writeResponses(context, true),
    },
  };
}

function bulkPatchHandler({ entity, repository, authz, requireIfMatch }: WriteContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const changes = readChanges(
      entity,
      reply,
      request.body as Record<string, unknown>[],
      requireIfMatch,
    );
    if (!changes) return reply;
    // A row writing what the caller may not is a 403 naming it; a row outside the scope is missing (404 naming it): nothing written.
    if (
      !authz.mayWriteRows(
        request,
        reply,
        changes.map((c) => c.patch),
      )
    )
      return reply;
    try {
      const rows = await repository.patchMany(
        changes,
        writeOptions(repository.recordsChanges, request, reply, authz.call(request, reply)),
      );
      return authz.accessOf ? rows.map((r) => authz.shown(request, r)) : rows;
    } catch (err) {
      return sendBatchProblem(
        reply,
        entity,
        err,
        changes.map((c) => c.key),
      );
    }
  };
}

/**
 * The route options of `PATCH /` (a bulk PATCH), relative to the group. Its body is validated row
 * by row (`validation`), so that a problem names the row.
 *
 * @example
 * ```ts
 * if (allows(operations, CrudOperations.Patch)) routes.push(bulkPatchRoute(context, settings.validation));
 * ```
 */
export function bulkPatchRoute(
  context: WriteContext,
  validation: CrudRouteSettings['validation'],
): RouteOptions {
  const row = ref(batchPatchName(context.entity));
  return {
    ...context.common,
    ...context.authz.guard(CrudOperations.Patch, 'patch'),
    validatorCompiler: batchCompiler(validation.compiler, row, false),
    method: 'PATCH',
    url: '',
    preValidation: requireJson,
    schema: documented(bulkPatchSchema(context, row)),
    handler: bulkPatchHandler(context),
  };
}
