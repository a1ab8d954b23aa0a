// POST / with one row as an object: a plain create.
import { readBody } from '../body.js';
import { badRequest } from '../problems.js';
import type { CreateCall, CreatePlan, UpsertPreference } from './plan.js';
import { planUpsert } from './upsert.js';

/**
 * The plan of a create of one row (an upsert of it under `Prefer`), or `undefined` once a 400 (a
 * bad field) or a 403 (a field the caller may not write) is sent.
 *
 * @example
 * ```ts
 * const plan = planSingle(createCall, request.body as Record<string, unknown>, undefined);
 * ```
 */
export function planSingle(
  c: CreateCall,
  given: Record<string, unknown>,
  preference: UpsertPreference | undefined,
): CreatePlan | undefined {
  const { entity, repository, authz, created } = c.context;
  const read = readBody(entity, given);
  if ('fault' in read) {
    badRequest(c.reply, read.fault);
    return undefined;
  }
  const row = read.values;
  if (preference) return planUpsert(c, [row], true, preference);
  if (!authz.mayWrite(c.request, c.reply, row)) return undefined;
  // A replay answers what was stored: the row as this caller saw it (keys are the caller's own).
  return {
    body: row,
    extra: undefined,
    serializeAsJson: false,
    create: async () => {
      const stored = await repository.create(row, c.options);
      return created(stored, c.shown(stored));
    },
  };
}
