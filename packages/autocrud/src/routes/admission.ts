// Admission of one request by an entity's rules: which rule the caller's token matches for an
// operation (403 when none; 401 without a token), the Access it grants (the Scope on every
// statement, the hidden fields) and the checks of what a write may carry. The route hooks and the
// scoped includes built on it are authorize.ts's.
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { AutoCrudOperation, ResolvedAuthorization, ResolvedRule } from '../authorization.js';
import type { Entity, EntityField } from '../entity.js';
import type { Filter, Scope } from '../mapper/sql/query.js';
import type { RelationsOf } from './includes.js';
import { allows, CrudOperations } from '../operations.js';
import { fieldText, fieldValue } from '../values/fields.js';
import { ValueFault } from '../values/kinds.js';
import { problemText } from '../answers.js';
import { answer } from './problems.js';
import { ForbiddenError, TokenRequiredError } from './route-errors.js';

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
    if (
      typeof value !== 'object' ||
      value === null ||
      !Object.prototype.hasOwnProperty.call(value, segment)
    )
      return undefined;
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

/** The rule's access for this caller, or the 403 detail when its claims cannot scope it. */
async function accessFor(
  entity: Entity,
  rule: ResolvedRule,
  request: FastifyRequest,
  operation: AutoCrudOperation,
): Promise<Access | string> {
  const where: Filter[] = [];
  const fixed = new Map<string, unknown>();
  for (const check of rule.checks) {
    const field = entity.field(check.field) as EntityField;
    const value = claimValue(field, claim(request.user, check.claim));
    if (value instanceof ValueFault)
      return problemText('KIT_ERR_AUTOCRUD_FORBIDDEN', 'claim', {
        claim: check.claim.join('.'),
        entity: entity.name,
        verb: VERBS[operation],
      });
    where.push({ field: field.name, op: 'eq', value });
    fixed.set(field.name, value);
  }
  if (rule.where) {
    const extra = await rule.where(request, operation);
    if (extra === false)
      return problemText('KIT_ERR_AUTOCRUD_FORBIDDEN', 'notThisCaller', {
        entity: entity.name,
        verb: VERBS[operation],
      });
    where.push(...extra);
  }
  const readOnly = rule.readOnly.filter((name) => !fixed.has(name));
  return {
    scope:
      where.length > 0 || rule.readOnly.length > 0 ? { where, readOnly: rule.readOnly } : undefined,
    hidden: rule.hidden,
    readOnly,
    fixed,
  };
}

/**
 * Why a caller may not: no token, and no anonymous rule (401), or a 403.
 *
 * @example
 * ```ts
 * const refusal: Refusal = ForbiddenError.operation('delete', 'Order');
 * ```
 */
export type Refusal = TokenRequiredError | ForbiddenError;

/**
 * True when `admit` refused the caller.
 *
 * @example
 * ```ts
 * const access = await admit(entity, authorization, flag, 'get', request);
 * if (refused(access)) return refuse(reply, access);
 * ```
 */
export function refused(access: Access | Refusal): access is Refusal {
  return access instanceof TokenRequiredError || access instanceof ForbiddenError;
}

/** Sends the refusal (401 with its challenge, or 403). */
export function refuse(reply: FastifyReply, refusal: Refusal): FastifyReply {
  return answer(reply, refusal);
}

/**
 * The access the caller of `request` (its verified token in `request.user`, or none) has to
 * `entity`'s rows for one operation under its rules, or why not: the first rule the caller
 * matches that allows the operation decides.
 */
export async function admit(
  entity: Entity,
  authorization: ResolvedAuthorization,
  flag: number,
  operation: AutoCrudOperation,
  request: FastifyRequest,
): Promise<Access | Refusal> {
  const user = request.user;
  const roles = user === undefined ? NO_ROLES : rolesOf(user, authorization.rolesClaim);
  const rule = authorization.rules.find(
    (r) => allows(r.allow, flag) && (r.role === undefined || roles.includes(r.role)),
  );
  if (!rule)
    return user === undefined
      ? new TokenRequiredError()
      : ForbiddenError.operation(VERBS[operation], entity.name);
  const access = await accessFor(entity, rule, request, operation);
  return typeof access === 'string' ? new ForbiddenError(access) : access;
}

/**
 * The onRequest hooks of one generated route under authorization: the token check (optional when
 * an anonymous rule allows the operation: a token, when sent, must still be valid), then the rule.
 */
export function authorizeHooks(
  entity: Entity,
  authorization: ResolvedAuthorization,
  flag: number,
  operation: AutoCrudOperation,
  authenticate: onRequestHookHandler,
  relationsOf?: RelationsOf,
): onRequestHookHandler[] {
  const rules = authorization.rules.filter((rule) => allows(rule.allow, flag));
  const open = rules.some((rule) => rule.role === undefined);
  const writes = WRITES.has(operation);
  async function authorize(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const access = await admit(entity, authorization, flag, operation, request);
    if (refused(access)) return refuse(reply, access);
    accesses.set(
      request,
      writes ? await withReferences(request, entity, access, relationsOf) : access,
    );
    return undefined;
  }
  // Without a token, an operation an anonymous rule allows goes straight to the rule.
  return [open ? optionalToken(authenticate) : authenticate, authorize] as onRequestHookHandler[];
}

/** The token check when a token is sent (it must then be valid); without one, the request goes on as anonymous. */
export function optionalToken(authenticate: onRequestHookHandler): onRequestHookHandler {
  const verify = authenticate as (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  const optional = async (request: FastifyRequest, reply: FastifyReply): Promise<unknown> =>
    request.headers.authorization === undefined ? undefined : verify(request, reply);
  return optional as onRequestHookHandler;
}

const WRITES: ReadonlySet<AutoCrudOperation> = new Set(['create', 'update', 'patch']);

/**
 * `access` with the rows of each referenced entity that has rules the caller may name (its rules'
 * conditions for a read by key; none when they refuse the caller): the mapper refuses a reference
 * to a row outside them as one to a missing row, inside the write's statements, so a write cannot
 * tell another owner's row from no row (see `Scope.references`).
 */
export async function withReferences(
  request: FastifyRequest,
  entity: Entity,
  access: Access,
  relationsOf: RelationsOf | undefined,
): Promise<Access> {
  if (!relationsOf || entity.references.length === 0) return access;
  let references: Map<Entity, readonly Filter[] | null> | undefined;
  for (const relation of relationsOf(entity).values()) {
    if (relation.kind !== 'one' || !relation.authorization) continue;
    const seen = await admit(
      relation.entity,
      relation.authorization,
      CrudOperations.Get,
      'get',
      request,
    );
    (references ??= new Map()).set(
      relation.entity,
      refused(seen) ? null : (seen.scope?.where ?? []),
    );
  }
  return references
    ? { ...access, scope: { ...(access.scope ?? { where: [] }), references } }
    : access;
}

/** True when an anonymous rule allows the operation: its document says the token is optional. */
export function anonymousAllowed(authorization: ResolvedAuthorization, flag: number): boolean {
  return authorization.rules.some((rule) => rule.role === undefined && allows(rule.allow, flag));
}

/** The 403 detail for a body that writes what the caller may not; `undefined` when it may (a field bound to a claim and repeating it is dropped). */
export function forbiddenWrite(
  entity: Entity,
  access: Access,
  body: Record<string, unknown>,
): string | undefined {
  for (const name of Object.keys(body)) {
    if (access.fixed.has(name)) {
      if (body[name] !== access.fixed.get(name))
        return problemText('KIT_ERR_AUTOCRUD_FORBIDDEN', 'otherOwner', {
          field: name,
          entity: entity.name,
        });
      delete body[name];
    } else if (access.readOnly.includes(name)) {
      return problemText('KIT_ERR_AUTOCRUD_FORBIDDEN', 'readOnly', { field: name });
    }
  }
  return undefined;
}
