// Authorization of the generated routes at request time: which rule a caller's token matches for
// an operation (403 when none; 401 without a token), and the Scope the rule puts on every
// statement of the request (row checks bound to claims, the rule's `where` hook). Runs as the
// route's onRequest hooks, before the body is read: a refused request reads and writes nothing.
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { sendProblem } from '@kit/core';
import type { AutoCrudOperation, ResolvedAuthorization, ResolvedRule } from '../authorization.js';
import type { Entity, EntityField } from '../entity.js';
import type { Filter, Scope } from '../mapper/query.js';
import type { IncludeNode } from '../mapper/includes.js';
import type { IncludeRequest, RelationsOf } from './includes.js';
import type { CallOptions, Row } from '../mapper/repository.js';
import { clientSignal } from './abort.js';
import { visible } from './fields.js';
export { visible } from './fields.js';
import { problemResponse } from './schemas.js';
import { allows, CrudOperations } from '../operations.js';
import { fieldText, fieldValue } from '../values/fields.js';
import { ValueFault } from '../values/kinds.js';
import { badRequest, problem } from './problems.js';
import { routeProblems } from '../errors.js';

/** What the rule that admitted a request lets it do. */
export interface Access {
  /** For the repository: the rule's conditions and read-only fields; `undefined` when it has none. */
  readonly scope: Scope | undefined;
  /** Fields the caller never sees. */
  readonly hidden: ReadonlySet<string>;
  /** Fields the caller may not write, beside `fixed`. */
  readonly readOnly: readonly string[];
  /** The fields a row check binds, with the caller's claim value: a body may repeat it, never change it. */
  readonly fixed: ReadonlyMap<string, unknown>;
}

const accesses = new WeakMap<FastifyRequest, Access>();

/** The access the request was admitted with; `undefined` on a class without authorization. */
export function accessOf(request: FastifyRequest): Access | undefined {
  return accesses.get(request);
}

/** The claim at `path` of the verified token, or undefined. */
function claim(user: unknown, path: readonly string[]): unknown {
  let value = user;
  for (const segment of path) {
    if (typeof value !== 'object' || value === null || !Object.prototype.hasOwnProperty.call(value, segment)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

const NO_ROLES: readonly string[] = [];

/** The token's roles: an array of strings (other items ignored), or one string. */
function rolesOf(user: unknown, path: readonly string[]): readonly string[] {
  const value = claim(user, path);
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : NO_ROLES;
}

/** A claim as the value of `field`: a string claim read as a query string value is (`"42"` for an integer), others as JSON. */
function claimValue(field: EntityField, raw: unknown): unknown {
  if (typeof raw === 'string') return fieldText(field, raw);
  if (typeof raw === 'number' || typeof raw === 'boolean') return fieldValue(field, raw);
  return new ValueFault('is not a scalar');
}

const VERBS: Readonly<Record<AutoCrudOperation, string>> = {
  list: 'list',
  listAll: 'list',
  get: 'read',
  create: 'create',
  update: 'replace',
  patch: 'change',
  delete: 'delete',
};

function forbidden(reply: FastifyReply, detail: string): FastifyReply {
  return sendProblem(reply, problem(403, detail));
}

/** 401 with the bare challenge, as `app.kitAuthenticate` answers a request without a token. */
function tokenRequired(reply: FastifyReply): FastifyReply {
  return sendProblem(reply, { type: 'about:blank', title: 'Unauthorized', status: 401, detail: routeProblems.tokenRequired }, { 'www-authenticate': 'Bearer' });
}

/** The rule's access for this caller, or the 403 detail when its claims cannot scope it. */
async function accessFor(entity: Entity, rule: ResolvedRule, request: FastifyRequest, operation: AutoCrudOperation): Promise<Access | string> {
  const where: Filter[] = [];
  const fixed = new Map<string, unknown>();
  for (const check of rule.checks) {
    const field = entity.field(check.field) as EntityField;
    const value = claimValue(field, claim(request.user, check.claim));
    if (value instanceof ValueFault) return `The token's claim ${check.claim.join('.')} does not say whose ${entity.name} rows the caller may ${VERBS[operation]}; nothing was read or written.`;
    where.push({ field: field.name, op: 'eq', value });
    fixed.set(field.name, value);
  }
  if (rule.where) {
    const extra = await rule.where(request, operation);
    if (extra === false) return `This caller may not ${VERBS[operation]} ${entity.name} rows; nothing was read or written.`;
    where.push(...extra);
  }
  const readOnly = rule.readOnly.filter((name) => !fixed.has(name));
  return { scope: where.length > 0 || rule.readOnly.length > 0 ? { where, readOnly: rule.readOnly } : undefined, hidden: rule.hidden, readOnly, fixed };
}

/** Why a caller may not: 401 (no token, and no anonymous rule) or 403. */
export interface Refusal {
  readonly status: 401 | 403;
  readonly detail: string;
}

/** Sends the refusal (401 with its challenge, or 403). */
export function refuse(reply: FastifyReply, refusal: Refusal): FastifyReply {
  return refusal.status === 401 ? tokenRequired(reply) : forbidden(reply, refusal.detail);
}

/**
 * The access the caller of `request` (its verified token in `request.user`, or none) has to
 * `entity`'s rows for one operation under its rules, or why not: the first rule the caller
 * matches that allows the operation decides.
 */
export async function admit(entity: Entity, authorization: ResolvedAuthorization, flag: number, operation: AutoCrudOperation, request: FastifyRequest): Promise<Access | Refusal> {
  const user = request.user;
  const roles = user === undefined ? NO_ROLES : rolesOf(user, authorization.rolesClaim);
  const rule = authorization.rules.find((r) => allows(r.allow, flag) && (r.role === undefined || roles.includes(r.role)));
  if (!rule) return user === undefined ? { status: 401, detail: routeProblems.tokenRequired } : { status: 403, detail: `The token's roles do not allow this caller to ${VERBS[operation]} ${entity.name} rows; nothing was read or written.` };
  const access = await accessFor(entity, rule, request, operation);
  return typeof access === 'string' ? { status: 403, detail: access } : access;
}

/**
 * The onRequest hooks of one generated route under authorization: the token check (optional when
 * an anonymous rule allows the operation: a token, when sent, must still be valid), then the rule.
 */
export function authorizeHooks(entity: Entity, authorization: ResolvedAuthorization, flag: number, operation: AutoCrudOperation, authenticate: onRequestHookHandler, relationsOf?: RelationsOf): onRequestHookHandler[] {
  const rules = authorization.rules.filter((rule) => allows(rule.allow, flag));
  const open = rules.some((rule) => rule.role === undefined);
  const writes = WRITES.has(operation);
  async function authorize(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const access = await admit(entity, authorization, flag, operation, request);
    if ('status' in access) return refuse(reply, access);
    accesses.set(request, writes ? await withReferences(request, entity, access, relationsOf) : access);
    return undefined;
  }
  // Without a token, an operation an anonymous rule allows goes straight to the rule.
  return [open ? optionalToken(authenticate) : authenticate, authorize] as onRequestHookHandler[];
}

/** The token check when a token is sent (it must then be valid); without one, the request goes on as anonymous. */
export function optionalToken(authenticate: onRequestHookHandler): onRequestHookHandler {
  const verify = authenticate as (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  const optional = async (request: FastifyRequest, reply: FastifyReply): Promise<unknown> => (request.headers.authorization === undefined ? undefined : verify(request, reply));
  return optional as onRequestHookHandler;
}

const WRITES: ReadonlySet<AutoCrudOperation> = new Set(['create', 'update', 'patch']);

/**
 * `access` with the rows of each referenced entity that has rules the caller may name (its rules'
 * conditions for a read by key; none when they refuse the caller): the mapper refuses a reference
 * to a row outside them as one to a missing row, inside the write's statements, so a write cannot
 * tell another owner's row from no row (see `Scope.references`).
 */
export async function withReferences(request: FastifyRequest, entity: Entity, access: Access, relationsOf: RelationsOf | undefined): Promise<Access> {
  if (!relationsOf || entity.references.length === 0) return access;
  let references: Map<Entity, readonly Filter[] | null> | undefined;
  for (const relation of relationsOf(entity).values()) {
    if (relation.kind !== 'one' || !relation.authorization) continue;
    const seen = await admit(relation.entity, relation.authorization, CrudOperations.Get, 'get', request);
    (references ??= new Map()).set(relation.entity, 'status' in seen ? null : (seen.scope?.where ?? []));
  }
  return references ? { ...access, scope: { ...(access.scope ?? { where: [] }), references } } : access;
}

/** True when an anonymous rule allows the operation: its document says the token is optional. */
export function anonymousAllowed(authorization: ResolvedAuthorization, flag: number): boolean {
  return authorization.rules.some((rule) => rule.role === undefined && allows(rule.allow, flag));
}


/** The 403 detail for a body that writes what the caller may not; `undefined` when it may (a field bound to a claim and repeating it is dropped). */
export function forbiddenWrite(entity: Entity, access: Access, body: Record<string, unknown>): string | undefined {
  for (const name of Object.keys(body)) {
    if (access.fixed.has(name)) {
      if (body[name] !== access.fixed.get(name)) return `Body field '${name}' names another ${entity.name} owner than the caller's token; nothing was written.`;
      delete body[name];
    } else if (access.readOnly.includes(name)) {
      return `Body field '${name}' may not be written by this caller; nothing was written.`;
    }
  }
  return undefined;
}

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
export async function scopeIncludes(request: FastifyRequest, reply: FastifyReply, included: IncludeRequest, own: ReadonlySet<string> | undefined): Promise<ScopedIncludes | false> {
  const hidden = new Map<string, ReadonlySet<string>>();
  if (own && own.size > 0) hidden.set('', own);
  const walk = async (nodes: readonly IncludeNode[], prefix: string): Promise<IncludeNode[] | false> => {
    const out: IncludeNode[] = [];
    for (const node of nodes) {
      const path = prefix === '' ? node.name : `${prefix}.${node.name}`;
      const relation = included.relations.get(path);
      let scope: Scope | undefined;
      if (relation?.authorization) {
        const [flag, operation] = node.kind === 'one' ? [CrudOperations.Get, 'get' as const] : [CrudOperations.List, 'list' as const];
        const access = await admit(relation.entity, relation.authorization, flag, operation, request);
        if ('status' in access) {
          refuse(reply, { ...access, detail: access.status === 403 ? `include=${path}: ${access.detail}` : access.detail });
          return false;
        }
        const asked = included.fields.get(path);
        const concealed = asked?.find((name) => access.hidden.has(name));
        if (concealed !== undefined) {
          badRequest(reply, { in: 'querystring', name: `fields[${path}]`, detail: `names no field of ${relation.entity.name}: ${concealed}; fields: ${relation.entity.fields.filter((f) => !access.hidden.has(f.name)).map((f) => f.name).join(', ')}` });
          return false;
        }
        if (access.hidden.size > 0) hidden.set(path, access.hidden);
        scope = access.scope && access.scope.where.length > 0 ? { where: access.scope.where } : undefined;
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
  includes(request: FastifyRequest, reply: FastifyReply, included: IncludeRequest): Promise<ScopedIncludes | false>;
  /** False once a 403 naming the row is sent for a row of a many-row body that writes what the caller may not. */
  mayWriteRows(request: FastifyRequest, reply: FastifyReply, rows: readonly Record<string, unknown>[], path?: (index: number) => string): boolean;
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
export function routeAuthorization(entity: Entity, authorization: ResolvedAuthorization | undefined, authenticate: onRequestHookHandler | undefined, relationsOf?: RelationsOf): RouteAuthorization {
  if (!authorization || !authenticate) return PLAIN;
  return {
    guard: (flag, operation) => ({ onRequest: authorizeHooks(entity, authorization, flag, operation, authenticate, relationsOf) }),
    schema: (flag) => (anonymousAllowed(authorization, flag) ? { security: OPTIONAL_TOKEN } : {}),
    responses: { 403: problemResponse(403) },
    call(request, reply) {
      const scope = accessOf(request)?.scope;
      return scope ? { signal: clientSignal(request, reply), scope } : { signal: clientSignal(request, reply) };
    },
    hiddenOf: (request) => accessOf(request)?.hidden,
    shown: (request, row) => visible(row, accessOf(request)?.hidden),
    mayWrite(request, reply, body) {
      const access = accessOf(request);
      const refused = access && forbiddenWrite(entity, access, body);
      if (refused) sendProblem(reply, problem(403, refused));
      return !refused;
    },
    accessOf,
    includes: (request, reply, included) => scopeIncludes(request, reply, included, accessOf(request)?.hidden),
    mayWriteRows(request, reply, rows, path = (i) => `[${i}]`) {
      const access = accessOf(request);
      if (!access) return true;
      for (let i = 0; i < rows.length; i++) {
        const refused = forbiddenWrite(entity, access, rows[i] as Record<string, unknown>);
        if (refused) {
          const row = path(i);
          sendProblem(reply, problem(403, row === '' ? refused : `Row ${row}: ${refused}`));
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
export function autoCrudAccess(request: FastifyRequest): { readonly scope: Scope | undefined; readonly hiddenFields: readonly string[] } | undefined {
  const access = accessOf(request);
  return access && { scope: access.scope, hiddenFields: [...access.hidden] };
}
