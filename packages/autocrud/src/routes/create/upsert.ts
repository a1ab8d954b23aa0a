// POST / with `Prefer: resolution=merge-duplicates` or `ignore-duplicates` (PostgREST's spelling):
// an upsert on the entity's unique key (`on_conflict` names which), of one row or many. The answer
// says, per row, whether it was created, updated or left unchanged.
import type { Entity } from '../../entity.js';
import type { UpsertResolution } from '../../mapper/repository.js';
import { openapiText } from '../openapi-text.js';
import { badRequest, type InvalidParameter } from '../problems.js';
import type { CreateCall, CreatePlan, UpsertPreference } from './plan.js';
import { parameterText } from '../../answers.js';

/**
 * The answer headers of an upsert, for the document.
 *
 * @example
 * ```ts
 * const headers = { Location: { type: 'string' }, ...UPSERT_HEADERS };
 * ```
 */
export const UPSERT_HEADERS = {
  'Preference-Applied': { type: 'string', description: openapiText.create.preferenceApplied },
  'Kit-Row-Outcomes': { type: 'string', description: openapiText.create.rowOutcomes },
};

/**
 * The header that lists, for an upsert, what happened to each row in order.
 *
 * @example
 * ```ts
 * reply.header(OUTCOMES_HEADER, 'created, updated');
 * ```
 */
export const OUTCOMES_HEADER = 'kit-row-outcomes';

/**
 * The query parameter naming the unique key an upsert matches rows on (PostgREST's spelling).
 *
 * @example
 * ```ts
 * const given = (request.query as Record<string, unknown>)[ON_CONFLICT];
 * ```
 */
export const ON_CONFLICT = 'on_conflict';

const RESOLUTIONS: Readonly<Record<string, UpsertResolution>> = {
  'merge-duplicates': 'merge',
  'ignore-duplicates': 'ignore',
};

/**
 * The `resolution` preference of `Prefer` (RFC 7240: other preferences, and unknown values, are ignored).
 *
 * @example
 * ```ts
 * resolutionOf('return=minimal, resolution=merge-duplicates');   // { token: 'resolution=merge-duplicates', resolution: 'merge' }
 * ```
 */
export function resolutionOf(
  header: string | string[] | undefined,
): { token: string; resolution: UpsertResolution } | undefined {
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

/**
 * The unique key an upsert matches on: `on_conflict`'s fields (in any order) naming one of the
 * entity's unique keys, else its first. A 400 when it names no declared key, or comes without a
 * `Prefer: resolution=...` (it would be silently ignored).
 *
 * @example
 * ```ts
 * const conflict = conflictKey(entity, query[ON_CONFLICT], preference);
 * if ('fault' in conflict) return badRequest(reply, conflict.fault);
 * ```
 */
export function conflictKey(
  entity: Entity,
  given: unknown,
  preference: unknown,
): { key: readonly string[] } | { fault: InvalidParameter } {
  const first = (entity.unique[0] ?? []) as readonly string[];
  if (given === undefined) return { key: first };
  const fault = (detail: string) => ({
    fault: { in: 'querystring' as const, name: ON_CONFLICT, detail },
  });
  if (entity.unique.length === 0)
    return fault(parameterText('noKeyToName', { entity: entity.name }));
  if (preference === undefined) return fault(parameterText('upsertOnly'));
  const fields = typeof given === 'string' ? given.split(',').map((f) => f.trim()) : [];
  const wanted = [...fields].sort().join(',');
  const key = entity.unique.find((k) => [...k].sort().join(',') === wanted);
  if (!key)
    return fault(
      parameterText('oneUniqueKey', {
        entity: entity.name,
        keys: entity.unique.map((k) => k.join(',')).join(' or '),
      }),
    );
  return { key };
}

/**
 * The plan of an upsert of `rows` (one row when `single`), or `undefined` once a 400 (a row without
 * its key) or 403 is sent.
 *
 * @example
 * ```ts
 * if (preference) return planUpsert(createCall, rows, false, preference);
 * ```
 */
export function planUpsert(
  c: CreateCall,
  rows: Record<string, unknown>[],
  single: boolean,
  preference: UpsertPreference,
): CreatePlan | undefined {
  const { entity, repository, authz, outcomes } = c.context;
  const { token, resolution, key } = preference;
  for (let i = 0; i < rows.length; i++) {
    const missing = key.find(
      (name) =>
        (rows[i] as Record<string, unknown>)[name] === undefined ||
        (rows[i] as Record<string, unknown>)[name] === null,
    );
    if (missing !== undefined) {
      badRequest(c.reply, {
        in: 'body',
        name: single ? missing : `[${i}].${missing}`,
        detail: parameterText('upsertKey', { key: key.join(', ') }),
      });
      return undefined;
    }
  }
  if (!authz.mayWriteRows(c.request, c.reply, rows, single ? () => '' : undefined))
    return undefined;
  // The key is part of what an Idempotency-Key covers: the same rows matched on another key are another request.
  const extra = key === entity.unique[0] ? resolution : { resolution, key };
  return {
    body: single ? (rows[0] as Record<string, unknown>) : rows,
    extra,
    serializeAsJson: true,
    create: async () =>
      outcomes(
        (await repository.upsertMany(rows, { resolution, key, ...c.options })).map((r) => ({
          row: c.shown(r.row),
          outcome: r.outcome,
        })),
        token,
        single,
      ),
  };
}
