// Authorization of the generated routes at request time, as each route takes it (RouteAuthorization):
// its onRequest hooks (before the body is read: a refused request reads and writes nothing), the
// caller's scope in every repository call, hidden fields out of every answer, and includes scoped
// by the rules of each included entity. Which rule admits a request, and the Access it grants, is
// admission.ts's.
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { AutoCrudOperation, ResolvedAuthorization } from '../authorization.js';
import type { Entity } from '../entity.js';
import type { Scope } from '../mapper/sql/query.js';
import type { IncludeNode } from '../mapper/reads/includes.js';
import type { IncludeRequest, RelationsOf } from './includes.js';
import type { CallOptions, Row } from '../mapper/repository.js';
import { clientSignal } from './abort.js';
import { visible } from './fields.js';
export { visible } from './fields.js';
import { problemResponse } from './answer-schemas.js';
import { CrudOperations } from '../operations.js';
import { answer, badRequest } from './problems.js';
import { ForbiddenError } from './route-errors.js';
import {
  accessOf,
  admit,
  anonymousAllowed,
  authorizeHooks,
  forbiddenWrite,
  refuse,
  refused,
  type Access,
} from './admission.js';
import { parameterText } from '../answers.js';

/** An include tree with each node scoped by the caller's rules of its entity, and the fields hidden by path (`''`: the row's own). */
export interface ScopedIncludes {
  readonly nodes: readonly IncludeNode[];
  readonly hidden: ReadonlyMap<string, ReadonlySet<string>>;
}

/**
 * The include tree of `included` with the caller's scope of each included entity that has rules
 * (read as that entity's get for a many-to-one relation, its list for a one-to-many one), or
 * `false` once the answer is sent: 401/403 when its rules do not let the caller read it, 400 for a
 * `fields[path]` naming a field hidden from the caller (as an unknown field).
 */
export async function scopeIncludes(
  request: FastifyRequest,
  reply: FastifyReply,
  included: IncludeRequest,
  own: ReadonlySet<string> | undefined,
): Promise<ScopedIncludes | false> {
  const hidden = new Map<string, ReadonlySet<string>>();
  if (own && own.size > 0) hidden.set('', own);
  const walk = async (
    nodes: readonly IncludeNode[],
    prefix: string,
  ): Promise<IncludeNode[] | false> => {
    const out: IncludeNode[] = [];
    for (const node of nodes) {
      const path = prefix === '' ? node.name : `${prefix}.${node.name}`;
      const relation = included.relations.get(path);
      let scope: Scope | undefined;
      if (relation?.authorization) {
        const [flag, operation] =
          node.kind === 'one'
            ? [CrudOperations.Get, 'get' as const]
            : [CrudOperations.List, 'list' as const];
        const access = await admit(
          relation.entity,
          relation.authorization,
          flag,
          operation,
          request,
        );
        if (refused(access)) {
          refuse(reply, access.within(`include=${path}`));
          return false;
        }
        const asked = included.fields.get(path);
        const concealed = asked?.find((name) => access.hidden.has(name));
        if (concealed !== undefined) {
          badRequest(reply, {
            in: 'querystring',
            name: `fields[${path}]`,
            detail: parameterText('hiddenField', {
              entity: relation.entity.name,
              name: concealed,
              fields: relation.entity.fields
                .filter((f) => !access.hidden.has(f.name))
                .map((f) => f.name)
                .join(', '),
            }),
          });
          return false;
        }
        if (access.hidden.size > 0) hidden.set(path, access.hidden);
        scope =
          access.scope && access.scope.where.length > 0 ? { where: access.scope.where } : undefined;
      }
      const children = await walk(node.children, path);
      if (children === false) return false;
      out.push({ ...node, ...(scope ? { scope } : {}), children });
    }
    return out;
  };
  if (!included.scoped) return { nodes: included.nodes, hidden };
  const nodes = await walk(included.nodes, '');
  return nodes === false ? false : { nodes, hidden };
}

/** What the generated routes of one class ask of authorization; without it, each part does nothing and costs no lookup. */
export interface RouteAuthorization {
  /** The route's own onRequest hooks (the token, then the rule), replacing the class-wide token check. */
  guard(flag: number, operation: AutoCrudOperation): { onRequest?: onRequestHookHandler[] };
  /** The route's `security` where an anonymous rule makes the token optional. */
  schema(flag: number): { security?: Array<Record<string, string[]>> };
  /** The 403 answer in the document. */
  readonly responses: Record<string, unknown>;
  /** The options of a repository call: the client's signal, the caller's scope. */
  call(request: FastifyRequest, reply: FastifyReply): CallOptions;
  /** The fields the caller may not see; `undefined` without authorization. */
  hiddenOf(request: FastifyRequest): ReadonlySet<string> | undefined;
  /** The row as the caller may see it. */
  shown(request: FastifyRequest, row: Row): Row;
  /** False once a 403 is sent for a body that writes what the caller may not (a repeated own claim value is dropped from it). */
  mayWrite(request: FastifyRequest, reply: FastifyReply, body: Record<string, unknown>): boolean;
  /** The access of a request, for the list route; `undefined` without authorization. */
  readonly accessOf: ((request: FastifyRequest) => Access | undefined) | undefined;
  /** The include tree scoped by the included entities' rules (see {@link scopeIncludes}); `false` once a refusal is sent. */
  includes(
    request: FastifyRequest,
    reply: FastifyReply,
    included: IncludeRequest,
  ): Promise<ScopedIncludes | false>;
  /** False once a 403 naming the row is sent for a row of a many-row body that writes what the caller may not. */
  mayWriteRows(
    request: FastifyRequest,
    reply: FastifyReply,
    rows: readonly Record<string, unknown>[],
    path?: (index: number) => string,
  ): boolean;
}

/** OpenAPI's "no requirement, or the bearer token": the token is optional (core names the scheme `bearerAuth`). */
const OPTIONAL_TOKEN: Array<Record<string, string[]>> = [{}, { bearerAuth: [] }];

const PLAIN: RouteAuthorization = {
  guard: () => ({}),
  schema: () => ({}),
  responses: {},
  call: (request, reply) => ({ signal: clientSignal(request, reply) }),
  hiddenOf: () => undefined,
  shown: (_request, row) => row,
  mayWrite: () => true,
  accessOf: undefined,
  includes: (request, reply, included) => scopeIncludes(request, reply, included, undefined),
  mayWriteRows: () => true,
};

/** The authorization parts of one class's routes (see {@link RouteAuthorization}). */
export function routeAuthorization(
  entity: Entity,
  authorization: ResolvedAuthorization | undefined,
  authenticate: onRequestHookHandler | undefined,
  relationsOf?: RelationsOf,
): RouteAuthorization {
  if (!authorization || !authenticate) return PLAIN;
  return {
    guard: (flag, operation) => ({
      onRequest: authorizeHooks(entity, authorization, flag, operation, authenticate, relationsOf),
    }),
    schema: (flag) => (anonymousAllowed(authorization, flag) ? { security: OPTIONAL_TOKEN } : {}),
    responses: { 403: problemResponse(403) },
    call(request, reply) {
      const scope = accessOf(request)?.scope;
      return scope
        ? { signal: clientSignal(request, reply), scope }
        : { signal: clientSignal(request, reply) };
    },
    hiddenOf: (request) => accessOf(request)?.hidden,
    shown: (request, row) => visible(row, accessOf(request)?.hidden),
    mayWrite(request, reply, body) {
      const access = accessOf(request);
      const refused = access && forbiddenWrite(entity, access, body);
      if (refused) answer(reply, new ForbiddenError(refused));
      return !refused;
    },
    accessOf,
    includes: (request, reply, included) =>
      scopeIncludes(request, reply, included, accessOf(request)?.hidden),
    mayWriteRows(request, reply, rows, path = (i) => `[${i}]`) {
      const access = accessOf(request);
      if (!access) return true;
      for (let i = 0; i < rows.length; i++) {
        const refused = forbiddenWrite(entity, access, rows[i] as Record<string, unknown>);
        if (refused) {
          const row = path(i);
          answer(reply, ForbiddenError.ofRow(row, refused));
          return false;
        }
      }
      return true;
    },
  };
}

/**
 * What the authorization rules of a generated route admitted this request with: the `scope` to
 * pass to the repository (row checks and the `where` hook's conditions) and the fields to leave
 * out of answers. A hand-written route that replaces a generated one keeps its guard (the token
 * and the rule run first) and reads this to stay inside the caller's rows. `undefined` on a route
 * without authorization rules.
 *
 * @example
 * ```ts
 * app.get<{ Params: { id: string } }>('{id}', async (request, reply) => {
 *   const access = autoCrudAccess(request);
 *   const order = await kitAutoCrud.repository(Order).get(Number(request.params.id), { scope: access?.scope });
 *   return order ?? reply.code(404).send();
 * });
 * ```
 */
export function autoCrudAccess(
  request: FastifyRequest,
): { readonly scope: Scope | undefined; readonly hiddenFields: readonly string[] } | undefined {
  const access = accessOf(request);
  return access && { scope: access.scope, hiddenFields: [...access.hidden] };
}
