// The limits of the generated routes that both their handlers and their OpenAPI prose state: kept
// apart from the handlers so that the prose (openapi-text.ts) reads them without importing a route.

/**
 * The most rows one bulk create or bulk PATCH takes: above it, a 400 (nothing written).
 *
 * @example
 * ```ts
 * if (rows.length > MAX_BATCH_ROWS) return badRequest(reply, fault);
 * ```
 */
export const MAX_BATCH_ROWS = 1000;

/**
 * The most child rows one nested create takes, over all its relations: above it, a 400 (nothing written).
 *
 * @example
 * ```ts
 * const schema = { type: 'array', maxItems: MAX_NESTED_ROWS };
 * ```
 */
export const MAX_NESTED_ROWS = 1000;

/**
 * The most values of one `in`/`nin` filter.
 *
 * @example
 * ```ts
 * const pattern = `^[^,]+(?:,[^,]+){0,${MAX_LIST_VALUES - 1}}$`;
 * ```
 */
export const MAX_LIST_VALUES = 100;

/**
 * The rows a one-to-many include answers per parent when `limit[path]` is left out.
 *
 * @example
 * ```ts
 * const limit = asked ?? DEFAULT_INCLUDE_LIMIT;
 * ```
 */
export const DEFAULT_INCLUDE_LIMIT = 100;

/**
 * The most rows `limit[path]` may ask of a one-to-many include.
 *
 * @example
 * ```ts
 * const schema = { type: 'integer', minimum: 1, maximum: MAX_INCLUDE_LIMIT };
 * ```
 */
export const MAX_INCLUDE_LIMIT = 1000;
