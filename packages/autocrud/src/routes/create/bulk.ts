// POST / with an array of rows: every row in one transaction, or none.
import { readRows } from '../batch.js';
import type { CreateCall, CreatePlan, UpsertPreference } from './plan.js';
import { planUpsert } from './upsert.js';

/**
 * The plan of a bulk create (an upsert of the rows under `Prefer`), or `undefined` once a 400 or
 * 403 naming the row is sent.
 *
 * @example
 * ```ts
 * const plan = planBulk(createCall, request.body as Record<string, unknown>[], undefined);
 * ```
 */
export function planBulk(
  c: CreateCall,
  given: readonly Record<string, unknown>[],
  preference: UpsertPreference | undefined,
): CreatePlan | undefined {
  const { entity, repository, authz } = c.context;
  const rows = readRows(entity, c.reply, given);
  if (!rows) return undefined;
  if (preference) return planUpsert(c, rows, false, preference);
  // Every row is the caller's: a row naming another owner (or a field the caller may not write) is a 403 naming it, nothing written.
  if (!authz.mayWriteRows(c.request, c.reply, rows)) return undefined;
  return {
    body: rows,
    extra: undefined,
    serializeAsJson: true,
    create: async () => ({
      location: undefined,
      etag: undefined,
      row: (await repository.createMany(rows, c.options)).map(c.shown),
    }),
  };
}
