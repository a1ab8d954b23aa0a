// What every check of an entity definition shares: the names it accepts and the error a fault
// throws, so each message names the entity the same way.
import { KitError } from '@kit/core';

/**
 * A table, column, field or relation name: an SQL identifier PostgreSQL keeps whole (63 bytes).
 *
 * @example
 * ```ts
 * IDENTIFIER.test('order_lines'); // true
 * ```
 */
export const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
/**
 * An entity's name, which is its OpenAPI component name.
 *
 * @example
 * ```ts
 * COMPONENT_NAME.test('Shop.Product'); // true
 * ```
 */
export const COMPONENT_NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,99}$/;

/**
 * The error a faulty definition throws, naming the entity (`KIT_ERR_AUTOCRUD_ENTITY`).
 *
 * @example
 * ```ts
 * throw entityError('Product', "softDelete 'gone' is not a field of the schema.");
 * ```
 */
export function entityError(name: unknown, message: string): KitError {
  return new KitError(
    'KIT_ERR_AUTOCRUD_ENTITY',
    `defineEntity(${JSON.stringify(name)}): ${message}`,
  );
}

/**
 * Whether a value is a plain object (not null, not an array), as a schema or an option is.
 *
 * @example
 * ```ts
 * if (!isRecord(definition.schema)) throw entityError(name, 'schema must be an object.');
 * ```
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
