// What the authorization suites share: callers as bearer headers signed by the test authority, a
// fingerprint of the tables (and counts) a refused request must leave as they are, and the
// refusal check itself, answered as problem+json.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { TestAuthority } from '@kit/test-support/jwt-authority';
import type { EngineUnderTest } from './fixtures.ts';

/** Request headers carrying a token for `sub`, with `roles` (a list or one role) in `realm_access.roles` when given. */
export async function bearer(
  authority: TestAuthority,
  sub: string,
  roles?: readonly string[] | string,
): Promise<Record<string, string>> {
  return {
    authorization: `Bearer ${await authority.sign({ claims: { sub, ...(roles ? { realm_access: { roles } } : {}) } })}`,
  };
}

/** Every row of `tables` (soft-deleted ones included), hashed, and the number of rows each of `counted` holds. */
export function tablesFingerprint(
  engine: EngineUnderTest,
  tables: readonly string[],
  counted: readonly string[] = [],
): () => Promise<{ hash: string; counts: number[] }> {
  return async () => {
    const rows = [];
    for (const table of tables) rows.push(await engine.sql(`select * from ${table} order by id`));
    const counts = [...rows.map((r) => r.length)];
    for (const table of counted)
      counts.push(Number((await engine.sql(`select count(*) as n from ${table}`))[0]?.n));
    return { hash: createHash('sha256').update(JSON.stringify(rows)).digest('hex'), counts };
  };
}

/**
 * `send` (a request as a caller: its headers over the request's own) and `refusedUnchanged`: the
 * request is refused with `status` as problem+json, and `fingerprint` reads the same after it.
 */
export function callerRequests(app: () => FastifyInstance, fingerprint: () => Promise<unknown>) {
  const send = (
    caller: Record<string, string>,
    options: InjectOptions,
  ): Promise<LightMyRequestResponse> =>
    app().inject({ ...options, headers: { ...caller, ...options.headers } });
  const refusedUnchanged = async (
    caller: Record<string, string>,
    options: InjectOptions,
    status: number,
  ): Promise<LightMyRequestResponse> => {
    const before = await fingerprint();
    const res = await send(caller, options);
    const what = `${options.method ?? 'GET'} ${String(options.url)}`;
    assert.equal(res.statusCode, status, `${what}: ${res.body}`);
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/, what);
    assert.deepEqual(await fingerprint(), before, `${what} changed or recorded something`);
    return res;
  };
  return { send, refusedUnchanged };
}
