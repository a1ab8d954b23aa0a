// Atomic writes of many rows: a POST whose body is an array (bulk create) and a PATCH on the
// collection (bulk PATCH, one merge patch per row). The body is validated row by row against the
// one-row schema, so that a problem names the row and field as the client wrote them (`[3].price`);
// the repository writes every row in one transaction or none (see docs/decisions.md).
import type { FastifyReply, FastifySchemaCompiler } from 'fastify';
import type { AnySchema, ErrorObject, ValidateFunction } from 'ajv';
import { KitError } from '@kit/core';
import type { Entity } from '../entity.js';
import { isAnswerable, parameterText } from '../answers.js';
import { BatchRowError } from '../mapper/errors.js';
import { valueType, ValueFault } from '../values/kinds.js';
import { readBody } from './body.js';
import { answer, badRequest, BATCH_ROW, rowPath, sendShape } from './problems.js';
import { NotFoundError, PreconditionRequiredError } from './route-errors.js';
import { MAX_BATCH_ROWS } from './limits.js';

const SIZE = parameterText('batchSize', { max: MAX_BATCH_ROWS });

function sizeError(keyword: string): ErrorObject[] {
  return [{ keyword, instancePath: '', schemaPath: '', params: {}, message: SIZE }];
}

/**
 * A body validator that takes an array of rows, each checked by `validateRow`, and (when `single`)
 * one row as it is. An array's error is the first bad row's, marked with its index.
 */
function rowsValidator(
  validateRow: ValidateFunction,
  single: SingleValidator | boolean,
): ValidateFunction {
  const one: SingleValidator | undefined =
    typeof single === 'function' ? single : single ? plain(validateRow) : undefined;
  const check = ((data: unknown) => {
    if (!Array.isArray(data)) {
      if (one) {
        const { ok, errors } = one(data);
        check.errors = errors;
        return ok;
      }
      check.errors = [
        {
          keyword: 'type',
          instancePath: '',
          schemaPath: '',
          params: { type: 'array' },
          message: parameterText('anArray'),
        },
      ];
      return false;
    }
    if (data.length === 0 || data.length > MAX_BATCH_ROWS) {
      check.errors = sizeError(data.length === 0 ? 'minItems' : 'maxItems');
      return false;
    }
    for (let i = 0; i < data.length; i++) {
      if (!validateRow(data[i])) {
        check.errors = (validateRow.errors ?? []).map((e) => ({
          ...e,
          params: { ...e.params, [BATCH_ROW]: i },
        }));
        return false;
      }
    }
    check.errors = null;
    return true;
  }) as ValidateFunction;
  return check;
}

/** How a body that is one row (not an array) is checked. */
export type SingleValidator = (data: unknown) => { ok: boolean; errors: ErrorObject[] | null };

function plain(validateRow: ValidateFunction): SingleValidator {
  return (data) => {
    const ok = validateRow(data);
    return { ok, errors: ok ? null : (validateRow.errors ?? null) };
  };
}

/**
 * The validator compiler of a route whose body may be an array of rows: the body is checked row by
 * row against `rowSchema` (the route's own body schema, an `anyOf` of one row and an array of
 * rows, is there for the document). `single`: whether one row as an object is taken too, or how
 * it is checked (a nested create's, made from the row's validator).
 */
export function batchCompiler(
  compiler: FastifySchemaCompiler<AnySchema>,
  rowSchema: AnySchema,
  single: boolean | ((validateRow: ValidateFunction) => SingleValidator),
): FastifySchemaCompiler<AnySchema> {
  return (route) => {
    if (route.httpPart !== 'body') return compiler(route);
    const validateRow = compiler({ ...route, schema: rowSchema }) as ValidateFunction;
    return rowsValidator(validateRow, typeof single === 'function' ? single(validateRow) : single);
  };
}

/** The body schema of a route that takes `rowSchema` rows as an array (and one row too, when `single`). */
export function rowsSchema(
  rowSchema: Record<string, unknown>,
  single: boolean,
): Record<string, unknown> {
  const rows = { type: 'array', minItems: 1, maxItems: MAX_BATCH_ROWS, items: rowSchema };
  return single ? { anyOf: [rowSchema, rows] } : rows;
}

/** Every row in Kit's form, or `undefined` once a 400 naming the first bad row's field is sent. */
export function readRows(
  entity: Entity,
  reply: FastifyReply,
  rows: readonly Record<string, unknown>[],
): Record<string, unknown>[] | undefined {
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i < rows.length; i++) {
    const read = readBody(entity, rows[i] as Record<string, unknown>);
    if ('fault' in read) {
      badRequest(reply, { ...read.fault, name: rowPath(i, read.fault.name) });
      return undefined;
    }
    out.push(read.values);
  }
  return out;
}

/** One row of a bulk PATCH as the repository takes it. */
export interface RowChange {
  readonly key: unknown;
  readonly patch: Record<string, unknown>;
  readonly ifVersion?: readonly number[];
}

/**
 * The rows of a bulk PATCH in Kit's form, or `undefined` once a 400 (a bad field) or 428 (a row
 * without its version under `requireIfMatch`) naming the row is sent.
 */
export function readChanges(
  entity: Entity,
  reply: FastifyReply,
  rows: readonly Record<string, unknown>[],
  requireVersion: boolean,
): RowChange[] | undefined {
  const pk = entity.primaryKey;
  const version = entity.version;
  const pkType = valueType(entity.field(pk)?.kind ?? 'integer');
  const changes: RowChange[] = [];
  for (let i = 0; i < rows.length; i++) {
    const { [pk]: rawKey, ...rest } = rows[i] as Record<string, unknown>;
    let held: unknown;
    if (version !== undefined) {
      held = rest[version];
      delete rest[version];
    }
    if (requireVersion && held === undefined) {
      answer(
        reply,
        new PreconditionRequiredError(entity.name, {
          path: rowPath(i, ''),
          version: version ?? 'version',
        }),
      );
      return undefined;
    }
    const key = pkType.fromJson(rawKey);
    if (key instanceof ValueFault) {
      badRequest(reply, { in: 'body', name: rowPath(i, pk), detail: key.detail });
      return undefined;
    }
    const read = readBody(entity, rest);
    if ('fault' in read) {
      badRequest(reply, { ...read.fault, name: rowPath(i, read.fault.name) });
      return undefined;
    }
    changes.push({
      key,
      patch: read.values,
      ...(held === undefined ? {} : { ifVersion: [held as number] }),
    });
  }
  return changes;
}

/**
 * Answers a batch whose row `err.index` failed (nothing was written): 404 for a missing row, else
 * as the row's own error says it answers for a row ({@link Answerable}'s `rowProblem`: 400 for a
 * value, 409 for a constraint, 412 for a stale version, 422 for a reference to a missing or
 * soft-deleted row, naming its field, `[3].customerId`); each names the row (`[3]`, or `lines[3]`
 * for a child of a nested create, whose entity `relations` gives). A row refused for its
 * arguments is a 400 naming the row; anything else is rethrown for the routes' error handler.
 */
export function sendBatchProblem(
  reply: FastifyReply,
  entity: Entity,
  err: unknown,
  keys?: readonly unknown[],
  relations?: ReadonlyMap<string, Entity>,
): FastifyReply {
  if (!(err instanceof BatchRowError)) throw err;
  const path = rowPath(err.index, '', err.relation);
  const target = (err.relation === undefined ? entity : relations?.get(err.relation)) ?? entity;
  const key = keys?.[err.index];
  const which =
    key === undefined
      ? `Row ${path}`
      : `Row ${path} (${entity.name} ${entity.primaryKey} ${JSON.stringify(key)})`;
  const cause = err.cause;
  const row = { index: err.index, relation: err.relation, path, which, entity: target };
  if (err.missing)
    return sendShape(reply, new NotFoundError(target.name, target.primaryKey, key).rowProblem(row));
  const shape = isAnswerable(cause) ? cause.rowProblem?.(row) : undefined;
  if (shape) return sendShape(reply, shape);
  if (cause instanceof KitError && cause.code === 'KIT_ERR_INVALID_ARGUMENT')
    return badRequest(reply, { in: 'body', name: path, detail: cause.message });
  throw cause;
}
