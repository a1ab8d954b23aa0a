// A bulk merge patch: a JSON Merge Patch applied to each row of one entity in one transaction,
// each at its own version; the rows it replaces read and locked where their changes are recorded.
import { sql } from 'kysely';
import { keyValue, patchValues } from '../sql/arguments.js';
import { BatchRowError, VersionConflictError } from '../errors.js';
import type { Eb, Scope } from '../sql/query.js';
import { checkReadOnly } from '../sql/scope.js';
import type { Row, Table } from '../seam/table.js';
import type { ChangeContext, ChangeRecord } from '../seam/changes.js';

import { atomically, refuseGoneParents } from './atomically.js';
import { lockedRow } from '../seam/locked-rows.js';

/** One row of a bulk merge patch. */
interface RowPatch {
  readonly key: unknown;
  readonly patch: Readonly<Record<string, unknown>>;
  readonly ifVersion?: readonly number[] | undefined;
}

/** Applies a JSON Merge Patch to each row in one transaction, each at its own version; the stored rows in order. */
export async function patchMany(
  table: Table,
  changes: readonly RowPatch[],
  signal: AbortSignal | undefined,
  scope?: Scope,
  context?: ChangeContext,
): Promise<Row[]> {
  // Under a scope, a row outside it is missing (never a version conflict), its eq fields keep their value, and it is never recorded.
  const scoped = table.writeScope(scope, false);
  const where = scoped?.where ?? [];
  const prepared = changes.map((change, index) => {
    try {
      const ifVersion = table.checkCondition(change);
      const key = keyValue(table.pk, change.key);
      if (key === undefined) throw new BatchRowError(index, undefined);
      if (scoped) checkReadOnly(table.entity, scoped.scope, change.patch);
      const values = patchValues(table.entity, table.dialect, change.patch);
      return {
        key,
        ifVersion,
        values:
          Object.keys(values).length > 0
            ? table.maintained(scoped ? Object.assign(values, scoped.set) : values)
            : undefined,
      };
    } catch (err) {
      throw err instanceof BatchRowError ? err : new BatchRowError(index, err);
    }
  });
  if (prepared.length === 0) return [];
  const patches = changes.map((change) => change.patch);
  const recording = table.hooks.recording;
  return atomically(
    table,
    signal,
    async (db, trx, row, record, execute) => {
      await refuseGoneParents(table, db, trx, patches, undefined, scope);
      const rows: Row[] = [];
      const changed: ChangeRecord[] = [];
      for (const { key, ifVersion, values } of prepared) {
        const index = rows.length;
        // The row it replaces, read and locked on the transaction inside the scope (a row with nothing to write is not a change).
        const before =
          recording && values && ifVersion?.length !== 0
            ? await lockedRow(table, db, execute, key, where)
            : undefined;
        const target = (eb: Eb) =>
          table.target(eb, key, ifVersion?.length === 0 ? undefined : ifVersion, where);
        const query = values
          ? db.updateTable(table.name).set(values).where(target).returning(table.selection)
          : db.selectFrom(table.name).select(table.selection).where(target);
        const [stored] =
          ifVersion?.length === 0
            ? []
            : await row(index, () => trx.executeQuery<Row>(query.compile()));
        if (!stored) {
          // Nothing matched: the row is missing, or at another version.
          const [current] = await row(index, () =>
            trx.executeQuery<Row>(
              db
                .selectFrom(table.name)
                .select(sql.ref((table.version ?? table.pk).column).as('current'))
                .where((eb) => table.byKey(eb, key, where))
                .compile(),
            ),
          );
          throw new BatchRowError(
            index,
            current === undefined ? undefined : new VersionConflictError(Number(current.current)),
          );
        }
        const after = table.decode(stored);
        if (before) changed.push(table.change('patch', table.decode(before), after));
        rows.push(after);
      }
      await record(table, changed);
      return rows;
    },
    undefined,
    (index) => (patches[index] ? { table, input: patches[index] } : undefined),
    context,
  );
}
