// Schemas that carry an `$id` (TypeBox: `Type.Object({...}, { $id: 'User' })`) become named
// component schemas: every use in a body or a response is documented as
// `{ $ref: '#/components/schemas/User' }`, so a schema repeated across routes appears once and
// generated clients get one named type. Only the document changes; validation and serialization
// keep the route's own schema.
import type { FastifySchema, RouteOptions } from 'fastify';
import { coreErrors } from '../shared/errors.js';

type Json = Record<string, unknown>;

const NAME = /^[A-Za-z0-9._-]+$/;
// Parts whose schema the document shows as a schema (query, params and headers become parameters).
const SCHEMA_PARTS = ['body'] as const;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The named schemas of one Kit app. */
export class NamedSchemas {
  readonly #byId = new Map<string, { json: string; schema: Json; where: string }>();

  /** Records the `$id` schemas of a route's body and responses; the same `$id` with another shape fails. */
  collect(route: RouteOptions): void {
    const schema = route.schema as Json | undefined;
    if (!schema) return;
    // This root hook runs before a group's own renames its relative URL: name the route by its parts.
    const { prefix, routePath } = route as RouteOptions & { prefix?: string; routePath?: string };
    const url =
      prefix !== undefined && routePath !== undefined
        ? `${prefix}/${routePath.replace(/^\/+/, '')}`.replace(/\/$/, '')
        : route.url;
    const where = `${Array.isArray(route.method) ? route.method.join(',') : route.method} ${url}`;
    for (const part of SCHEMA_PARTS) this.#walk(schema[part], where);
    if (isObject(schema.response))
      for (const value of Object.values(schema.response)) this.#walk(value, where);
  }

  #walk(value: unknown, where: string): void {
    if (Array.isArray(value)) {
      for (const item of value) this.#walk(item, where);
      return;
    }
    if (!isObject(value)) return;
    const id = value.$id;
    if (typeof id === 'string' && NAME.test(id)) {
      const json = JSON.stringify(value);
      const known = this.#byId.get(id);
      if (known && known.json !== json) {
        throw coreErrors.error('KIT_ERR_SCHEMA_ID', { id, first: known.where, second: where });
      }
      if (!known) this.#byId.set(id, { json, schema: value, where });
    }
    for (const child of Object.values(value)) this.#walk(child, where);
  }

  /** The route schema as the document shows it: named schemas in the body and responses replaced by references. */
  rewrite<T extends FastifySchema | undefined>(schema: T): T {
    if (!schema || this.#byId.size === 0) return schema;
    const s = schema as Json;
    const out: Json = { ...s };
    for (const part of SCHEMA_PARTS) if (part in s) out[part] = this.#refs(s[part], true);
    if (isObject(s.response))
      out.response = Object.fromEntries(
        Object.entries(s.response).map(([code, value]) => [code, this.#refsInResponse(value)]),
      );
    return out as T;
  }

  // A response may be `{ description, content: { type: { schema } } }` (swagger's form) or a schema.
  #refsInResponse(value: unknown): unknown {
    if (isObject(value) && isObject(value.content)) {
      const content = Object.fromEntries(
        Object.entries(value.content).map(([type, media]) => [
          type,
          isObject(media) ? { ...media, schema: this.#refs(media.schema, true) } : media,
        ]),
      );
      return { ...value, content };
    }
    return this.#refs(value, true);
  }

  #refs(value: unknown, top: boolean): unknown {
    if (Array.isArray(value)) return value.map((item) => this.#refs(item, false));
    if (!isObject(value)) return value;
    const id = value.$id;
    if (typeof id === 'string' && this.#byId.has(id)) {
      const ref = { $ref: `#/components/schemas/${id}` };
      // swagger reads a response's `description` from its top-level schema: keep it beside the reference.
      return top && typeof value.description === 'string'
        ? { ...ref, description: value.description }
        : ref;
    }
    return Object.fromEntries(
      Object.entries(value).map(([key, child]) => [key, this.#refs(child, false)]),
    );
  }

  /** `components.schemas` entries: each named schema without its `$id`, its own named parts referenced. */
  components(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [id, { schema }] of this.#byId) {
      const { $id: _id, ...rest } = schema;
      out[id] = this.#refs(rest, false);
    }
    return out;
  }
}
