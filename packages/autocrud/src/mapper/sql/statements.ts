// Statements built and compiled once, then run with each call's values. Kysely's builder and
// compiler cost more CPU per request than the rest of a primary-key read (docs/benchmarks.md),
// and a fixed SQL text lets an engine keep the statement prepared on each connection.
import { createHash } from 'node:crypto';
import type { Compilable, CompiledQuery } from 'kysely';

/** Runs a compiled statement (prepared under `name` where the engine can; cancelled when `signal` aborts, where it can) and returns its rows. */
export type Executor = (
  query: CompiledQuery,
  name: string,
  signal?: AbortSignal,
) => Promise<Array<Record<string, unknown>>>;

/** A value a statement takes at each call, by name: placed where the value goes when the query is built. */
export class Slot {
  constructor(readonly name: string) {}
}

/** A compiled query whose slots are filled at each call. */
export interface Statement {
  /**
   * Unique to the SQL text, so that a driver may prepare it once per connection under this name;
   * empty for a statement that is not kept (nothing is prepared for it).
   */
  readonly name: string;
  /** The query with each slot replaced by `values[slot.name]`. */
  bind(values: Readonly<Record<string, unknown>>): CompiledQuery;
}

/** Compiles `query` (built with `Slot`s in place of values) once; `named: false` for one that is not kept. */
export function statement(query: Compilable, named = true): Statement {
  const compiled = query.compile();
  const parameters = compiled.parameters;
  const name = named
    ? `kit_${createHash('sha256').update(compiled.sql).digest('base64url').slice(0, 24)}`
    : '';
  return {
    name,
    bind: (values) => ({
      ...compiled,
      parameters: parameters.map((p) => (p instanceof Slot ? values[p.name] : p)),
    }),
  };
}

/**
 * Statements by a key that names their shape (the columns an insert sets), up to `limit` of them;
 * past that, a shape is compiled at each call and not prepared, so that memory stays bounded here
 * and on the database's connections.
 */
export class StatementCache {
  readonly #statements = new Map<string, Statement>();

  constructor(private readonly limit = 64) {}

  get(key: string, build: () => Compilable): Statement {
    let found = this.#statements.get(key);
    if (found) return found;
    const kept = this.#statements.size < this.limit;
    found = statement(build(), kept);
    if (kept) this.#statements.set(key, found);
    return found;
  }
}
