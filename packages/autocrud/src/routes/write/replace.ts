// PUT /{pk} : replace the writable fields of a row.
import type { RouteOptions } from 'fastify';
import { CrudOperations } from '../../operations.js';
import { requireJson } from '../body.js';
import { openapiText } from '../openapi-text.js';
import { documented, type WriteContext } from '../route-context.js';
import { inputName, ref } from '../schemas.js';
import { conditionalHeaders, rowWriteResponses, writeByKey } from './by-key.js';

function replaceSchema(context: WriteContext): Record<string, unknown> {
  const { entity, authz, params } = context;
  return {
    summary: openapiText.replace.summary(entity),
    params,
    ...conditionalHeaders(context),
    body: ref(inputName(entity)),
    ...authz.schema(CrudOperations.Update),
    response: rowWriteResponses(context),
  };
}

/**
 * The route options of `PUT /{pk}`, relative to the group.
 *
 * @example
 * ```ts
 * if (allows(operations, CrudOperations.Update)) routes.push(replaceRoute(context));
 * ```
 */
export function replaceRoute(context: WriteContext): RouteOptions {
  const { repository } = context;
  return {
    ...context.common,
    ...context.authz.guard(CrudOperations.Update, 'update'),
    method: 'PUT',
    url: `{${context.entity.primaryKey}}`,
    preValidation: requireJson,
    schema: documented(replaceSchema(context)),
    handler: writeByKey(context, (key, body, options) => repository.update(key, body, options)),
  };
}
