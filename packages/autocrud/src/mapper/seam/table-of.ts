// Each repository's table, by the repository: the atomic writes that span two entities (a nested
// create) and the layers the database attaches at start-up reach a repository's table through it,
// without the repository showing its table to a host.
import { KitError } from '@kit/core';
import type { Table } from './table.js';

const tables = new WeakMap<object, Table>();

/**
 * Records `table` as the table of `owner` (a repository, as it is made).
 *
 * @example
 * ```ts
 * registerTable(this, this.#t);
 * ```
 */
export function registerTable(owner: object, table: Table): void {
  tables.set(owner, table);
}

/**
 * The table of a repository the AutoCrud database made; `KIT_ERR_INVALID_ARGUMENT` for any other.
 *
 * @example
 * ```ts
 * const child = tableOf(crud.repository(OrderLine));
 * ```
 */
export function tableOf(owner: object): Table {
  const table = tables.get(owner);
  if (!table)
    throw new KitError(
      'KIT_ERR_INVALID_ARGUMENT',
      'createTree: a child repository must be one the AutoCrud database made (crud.repository(Entity)).',
    );
  return table;
}
