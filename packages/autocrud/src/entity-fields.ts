// One field of an entity definition read from its property schema: the scalar type, nullability
// and format it declares, a string field's allowed values, a decimal's precision and scale.
import type { FieldType } from './entity-types.js';
import { entityError, isRecord } from './entity-checks.js';

const SCALARS: ReadonlySet<string> = new Set([
  'integer',
  'number',
  'string',
  'boolean',
  'object',
  'array',
]);

/**
 * The scalar type, nullability and format a property schema declares: `type: 'x'`,
 * `type: ['x', 'null']`, `anyOf`/`oneOf` whose members share one scalar type (TypeBox's nullable
 * and literal unions; a format is the members' one format), or `enum`/`const` of strings.
 *
 * @example
 * ```ts
 * scalarOf({ type: ['string', 'null'], format: 'uuid' }); // { type: 'string', nullable: true, format: 'uuid' }
 * ```
 */
export function scalarOf(
  schema: Record<string, unknown>,
): { type: FieldType; nullable: boolean; format: string | undefined } | undefined {
  const declared = schema.type;
  const types = Array.isArray(declared) ? declared : declared === undefined ? [] : [declared];
  const members = [
    ...(Array.isArray(schema.anyOf) ? schema.anyOf : []),
    ...(Array.isArray(schema.oneOf) ? schema.oneOf : []),
  ];
  let nullable = types.includes('null');
  const found = new Set<string>(
    types.filter((t): t is string => typeof t === 'string' && t !== 'null'),
  );
  const formats = new Set<string | undefined>(
    typeof schema.format === 'string' ? [schema.format] : found.size > 0 ? [undefined] : [],
  );
  for (const member of members) {
    if (!isRecord(member)) return undefined;
    const inner = scalarOf(member);
    if (!inner) {
      if (member.type === 'null') nullable = true;
      else return undefined;
      continue;
    }
    nullable ||= inner.nullable;
    found.add(inner.type);
    formats.add(inner.format);
  }
  const format = formats.size === 1 ? [...formats][0] : undefined;
  if (found.size === 0) {
    const values = Array.isArray(schema.enum)
      ? schema.enum
      : 'const' in schema
        ? [schema.const]
        : [];
    if (values.length > 0 && values.every((v) => typeof v === 'string' || v === null)) {
      return { type: 'string', nullable: nullable || values.includes(null), format: undefined };
    }
    return undefined;
  }
  // integer and number mixed are a number.
  if (found.size === 2 && found.has('integer') && found.has('number'))
    return { type: 'number', nullable, format: undefined };
  const [only] = found;
  return found.size === 1 && only !== undefined && SCALARS.has(only)
    ? { type: only as FieldType, nullable, format }
    : undefined;
}

/**
 * A string field's allowed values: `enum` of strings, or `anyOf`/`oneOf` members each a `const`
 * or `enum` (or null).
 *
 * @example
 * ```ts
 * enumOf({ anyOf: [{ const: 'new' }, { const: 'paid' }] }); // ['new', 'paid']
 * ```
 */
export function enumOf(schema: Record<string, unknown>): string[] | undefined {
  if (Array.isArray(schema.enum))
    return schema.enum.filter((v): v is string => typeof v === 'string');
  if (typeof schema.const === 'string') return [schema.const];
  const members = [
    ...(Array.isArray(schema.anyOf) ? schema.anyOf : []),
    ...(Array.isArray(schema.oneOf) ? schema.oneOf : []),
  ].filter((m) => isRecord(m) && m.type !== 'null');
  if (members.length === 0) return undefined;
  const values: string[] = [];
  for (const member of members) {
    const inner = enumOf(member as Record<string, unknown>);
    if (!inner) return undefined;
    values.push(...inner);
  }
  return values;
}

/**
 * A decimal's `x-precision` / `x-scale`, checked.
 *
 * @example
 * ```ts
 * decimalSize('Product', 'price', { type: 'string', format: 'decimal', 'x-precision': 10, 'x-scale': 2 }); // { precision: 10, scale: 2 }
 * ```
 */
export function decimalSize(
  entity: string,
  field: string,
  schema: Record<string, unknown>,
): { precision: number | undefined; scale: number | undefined } {
  const precision = schema['x-precision'];
  const scale = schema['x-scale'];
  if (precision === undefined) {
    if (scale !== undefined)
      throw entityError(
        entity,
        `field '${field}' has x-scale without x-precision: give both (numeric(precision, scale)).`,
      );
    return { precision: undefined, scale: undefined };
  }
  if (!Number.isInteger(precision) || (precision as number) < 1 || (precision as number) > 1000)
    throw entityError(
      entity,
      `field '${field}': x-precision must be an integer from 1 to 1000 (PostgreSQL's numeric); found ${JSON.stringify(precision)}.`,
    );
  if (
    scale !== undefined &&
    (!Number.isInteger(scale) || (scale as number) < 0 || (scale as number) > (precision as number))
  ) {
    throw entityError(
      entity,
      `field '${field}': x-scale must be an integer from 0 to x-precision (${String(precision)}); found ${JSON.stringify(scale)}.`,
    );
  }
  return { precision: precision as number, scale: (scale as number | undefined) ?? 0 };
}
