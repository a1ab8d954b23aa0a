/**
 * The operations an `@AutoCrud` class serves, as flags: combine with `|`. `All` is the first
 * five; `ListAll` (`GET /all`, the whole table) and `Patch` (`PATCH /{pk}`, a JSON Merge Patch)
 * are never on by default: a host that says `All` does not gain a write route by upgrading.
 *
 * @example
 * ```ts
 * @AutoCrud(Product, { operations: CrudOperations.List | CrudOperations.Get })   // read-only
 * export class ProductEndpoint {}
 *
 * @AutoCrud(Order, { operations: CrudOperations.All | CrudOperations.Patch })    // with partial updates
 * export class OrderEndpoint {}
 * ```
 */
export const CrudOperations = {
  List: 1,
  Get: 2,
  Create: 4,
  Update: 8,
  Delete: 16,
  All: 31,
  ListAll: 32,
  Patch: 64,
  /** `GET /{pk}/history`: the row's change history, newest first (the entity needs `history: true`). */
  History: 128,
} as const;

/** A combination of {@link CrudOperations} flags. */
export type CrudOperations = number;

/** True when `operations` includes `flag`. */
export function allows(operations: number, flag: number): boolean {
  return (operations & flag) === flag;
}
