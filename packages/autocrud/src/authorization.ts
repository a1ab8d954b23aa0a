// What a host declares on an @AutoCrud class to decide who may do what to which rows: rules by
// token role (or for anonymous callers), row checks binding a field to a claim, fields a role may
// not read or write, and a hook for conditions the declarative form cannot say. Checked once, at
// decoration; enforced by the routes (routes/authorize.ts) through the mapper's Scope, inside
// each statement.
import type { FastifyRequest } from 'fastify';
import { KitError } from '@kit/core';
import type { Entity } from './entity.js';
import type { Filter } from './mapper/sql/query.js';
import { allows, CrudOperations } from './operations.js';

/**
 * A claim of the token: a dotted path (`realm_access.roles`), or its segments when a claim name holds dots (`['https://example.com/roles']`).
 *
 * @example
 * ```ts
 * const keycloak: ClaimPath = 'realm_access.roles';
 * const auth0: ClaimPath = ['https://example.com/roles'];
 * ```
 */
export type ClaimPath = string | readonly string[];

/**
 * A generated route's operation, as the `where` hook is told it.
 *
 * @example
 * ```ts
 * const onlyOpenForReads: AuthorizationHook<'status'> = (_request, operation: AutoCrudOperation) =>
 *   operation === 'list' || operation === 'get' ? [] : [{ field: 'status', op: 'ne', value: 'closed' }];
 * ```
 */
export type AutoCrudOperation =
  'list' | 'listAll' | 'get' | 'create' | 'update' | 'patch' | 'delete';

/**
 * Extra conditions for one request (all must hold, joined to every statement the request runs),
 * or `false` to refuse it (403). On `create`, each `eq` condition sets its field instead.
 *
 * @example
 * ```ts
 * const sameRegion: AuthorizationHook<'region'> = (request) => [{ field: 'region', op: 'eq', value: request.headers['x-region'] ?? '' }];
 * ```
 */
export type AuthorizationHook<F extends string = string> = (
  request: FastifyRequest,
  operation: AutoCrudOperation,
) => readonly Filter<F>[] | false | Promise<readonly Filter<F>[] | false>;

interface RuleBody<F extends string> {
  /**
   * The operations the rule allows, as {@link CrudOperations} flags. `GET /{pk}/history` is read
   * under the rule that allows `Get` (`List` on a class without `Get`): `History` may be named
   * beside that flag (a class's `operations` reused as a rule's `allow`) and adds nothing; named
   * without it, start-up fails saying so.
   */
  readonly allow: number;
  /**
   * Row checks: each field must equal the caller's claim (`{ ownerId: 'sub', tenantId: 'tid' }`),
   * in every read and write; a create sets the field from the claim. A token without the claim, or
   * with one the field cannot hold, is refused (403).
   */
  readonly checks?: { readonly [K in F]?: ClaimPath };
  /** Fields this rule's callers never see: absent from answers, and unknown to `fields=`, `sort=` and filters (400); nor write (as `readOnlyFields`). */
  readonly hiddenFields?: readonly F[];
  /** Writable fields this rule's callers may not write: a body naming one is 403; `PUT` leaves them as they are. */
  readonly readOnlyFields?: readonly F[];
  /** Conditions the declarative form cannot say (see {@link AuthorizationHook}). */
  readonly where?: AuthorizationHook<F>;
}

/**
 * One rule: whom it is for (a role the token carries, or every caller with `anonymous: true`),
 * what it allows, and on which rows and fields.
 *
 * @example
 * ```ts
 * const customer: AuthorizationRule<'customerId' | 'cost' | 'status'> = {
 *   role: 'customer',
 *   allow: CrudOperations.List | CrudOperations.Get | CrudOperations.Create | CrudOperations.Patch,
 *   checks: { customerId: 'sub' },
 *   hiddenFields: ['cost'],
 *   readOnlyFields: ['status'],
 * };
 * ```
 */
export type AuthorizationRule<F extends string = string> = RuleBody<F> &
  (
    | { readonly role: string; readonly anonymous?: never }
    | { readonly anonymous: true; readonly role?: never }
  );

/**
 * `authorization` of `@AutoCrud`: the first rule (in order) that the caller matches and that
 * allows the operation decides; none: 403 (401 without a token).
 *
 * @example
 * ```ts
 * @AutoCrud(Order, {
 *   operations: CrudOperations.All | CrudOperations.Patch,
 *   authorization: {
 *     rolesClaim: 'realm_access.roles',
 *     rules: [
 *       { role: 'admin', allow: CrudOperations.All | CrudOperations.Patch },
 *       { role: 'customer', allow: CrudOperations.List | CrudOperations.Get | CrudOperations.Create, checks: { customerId: 'sub' }, hiddenFields: ['cost'] },
 *     ],
 *   },
 * })
 * export class OrdersEndpoint {}
 * ```
 */
export interface AutoCrudAuthorization<F extends string = string> {
  /** Where the token carries its roles: an array of strings, or one string (default `roles`). */
  readonly rolesClaim?: ClaimPath;
  readonly rules: readonly AuthorizationRule<F>[];
}

/** A rule as checked: segments of claim paths, sets of fields. */
export interface ResolvedRule {
  readonly index: number;
  readonly role: string | undefined;
  readonly allow: number;
  readonly checks: ReadonlyArray<{ readonly field: string; readonly claim: readonly string[] }>;
  readonly hidden: ReadonlySet<string>;
  readonly readOnly: readonly string[];
  readonly where: AuthorizationHook | undefined;
}

/** The declaration as checked. */
export interface ResolvedAuthorization {
  readonly rolesClaim: readonly string[];
  readonly rules: readonly ResolvedRule[];
}

/** Each operation's flag and name. */
const OPERATION_NAMES: ReadonlyArray<readonly [number, AutoCrudOperation]> = [
  [CrudOperations.List, 'list'],
  [CrudOperations.ListAll, 'listAll'],
  [CrudOperations.Get, 'get'],
  [CrudOperations.Create, 'create'],
  [CrudOperations.Update, 'update'],
  [CrudOperations.Patch, 'patch'],
  [CrudOperations.Delete, 'delete'],
];

/** Every flag a rule may name: the operations above, and `History` (which follows the read). */
const RULE_FLAGS = OPERATION_NAMES.reduce<number>(
  (all, [flag]) => all | flag,
  CrudOperations.History,
);

const RULE_KEYS = new Set([
  'role',
  'anonymous',
  'allow',
  'checks',
  'hiddenFields',
  'readOnlyFields',
  'where',
]);

function refuse(option: string, value: unknown, why: string): KitError {
  let shown: string;
  try {
    shown = typeof value === 'function' ? 'a function' : (JSON.stringify(value) ?? String(value));
  } catch {
    shown = String(value);
  }
  return new KitError('KIT_ERR_AUTOCRUD_AUTHORIZATION', `${option} is ${shown}: ${why}.`);
}

/** A claim path's segments; a KitError naming `option` for a malformed one. */
function claimPath(option: string, value: unknown): readonly string[] {
  const segments = typeof value === 'string' ? value.split('.') : value;
  if (
    !Array.isArray(segments) ||
    segments.length === 0 ||
    segments.some((s) => typeof s !== 'string' || s === '' || s.trim() !== s || s === '__proto__')
  ) {
    throw refuse(
      option,
      value,
      "a claim path is a claim name or dotted path ('sub', 'realm_access.roles'), or an array of its segments when a name holds dots (['https://example.com/roles']); no empty segment, no surrounding blanks",
    );
  }
  return segments as readonly string[];
}

function fieldList(
  option: string,
  entity: Entity,
  value: unknown,
  writable: boolean,
): readonly string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length === 0)
    throw refuse(option, value, 'list one field at least, or leave the option out');
  const seen = new Set<string>();
  for (const name of value) {
    if (typeof name !== 'string' || !entity.field(name))
      throw refuse(
        option,
        value,
        `${JSON.stringify(name)} is not a field of ${entity.name}; fields: ${entity.fields.map((f) => f.name).join(', ')}`,
      );
    if (seen.has(name)) throw refuse(option, value, `${name} is named twice`);
    if (!writable && name === entity.primaryKey)
      throw refuse(
        option,
        value,
        `the primary key ${name} names every row in URLs and Location headers; it cannot be hidden`,
      );
    if (writable && !entity.writable.includes(name))
      throw refuse(
        option,
        value,
        `${name} is not writable anyway; the writable fields are ${entity.writable.join(', ')}`,
      );
    seen.add(name);
  }
  return [...seen];
}

function resolveRule(
  where: string,
  entity: Entity,
  operations: number,
  rule: unknown,
  index: number,
): ResolvedRule {
  const option = `${where}.rules[${index}]`;
  if (typeof rule !== 'object' || rule === null || Array.isArray(rule))
    throw refuse(
      option,
      rule,
      'a rule is an object { role | anonymous, allow, checks?, hiddenFields?, readOnlyFields?, where? }',
    );
  const r = rule as Record<string, unknown>;
  for (const key of Object.keys(r))
    if (!RULE_KEYS.has(key))
      throw refuse(
        `${option}.${key}`,
        r[key],
        `not an option of a rule; a rule takes ${[...RULE_KEYS].join(', ')}`,
      );
  const anonymous = r.anonymous === true;
  if (r.anonymous !== undefined && r.anonymous !== true)
    throw refuse(
      `${option}.anonymous`,
      r.anonymous,
      'write anonymous: true for a rule that applies to every caller, with or without a token',
    );
  if (anonymous === (r.role !== undefined))
    throw refuse(
      option,
      rule,
      'a rule names either a role (a role the token carries) or anonymous: true (every caller), not both and not neither',
    );
  if (!anonymous && (typeof r.role !== 'string' || r.role === '' || r.role.trim() !== r.role))
    throw refuse(
      `${option}.role`,
      r.role,
      'a role is a non-empty string without surrounding blanks',
    );
  const allow = r.allow;
  if (
    typeof allow !== 'number' ||
    !Number.isInteger(allow) ||
    allow < 1 ||
    (allow & ~RULE_FLAGS) !== 0
  )
    throw refuse(
      `${option}.allow`,
      allow,
      'combine CrudOperations flags (List | Get | Create | Update | Delete | ListAll | Patch | History)',
    );
  if ((allow & ~operations) !== 0) {
    const missing = [...OPERATION_NAMES, [CrudOperations.History, 'history'] as const]
      .filter(([flag]) => allows(allow, flag) && !allows(operations, flag))
      .map(([, name]) => name);
    throw refuse(
      `${option}.allow`,
      allow,
      `allows ${missing.join(', ')}, which the class does not serve (its operations); leave them out of the rule or add them to operations`,
    );
  }
  // The history route is read under the rule of the class's read (routes.ts): History names no
  // operation of its own, so a rule that names it without that read would allow nothing by it.
  const read = allows(operations, CrudOperations.Get)
    ? ([CrudOperations.Get, 'get'] as const)
    : ([CrudOperations.List, 'list'] as const);
  if (allows(allow, CrudOperations.History) && !allows(allow, read[0]))
    throw refuse(
      `${option}.allow`,
      allow,
      `allows history but not ${read[1]}: GET /{pk}/history takes the rule that allows ${read[1]} (its row checks, where hook and hidden fields), so a rule gives the history by allowing ${read[1]}; add ${read[1] === 'get' ? 'Get' : 'List'} to this rule, or leave History out`,
    );
  const checks: Array<{ field: string; claim: readonly string[] }> = [];
  if (r.checks !== undefined) {
    if (
      typeof r.checks !== 'object' ||
      r.checks === null ||
      Array.isArray(r.checks) ||
      Object.keys(r.checks).length === 0
    ) {
      throw refuse(
        `${option}.checks`,
        r.checks,
        "checks bind fields to claims ({ ownerId: 'sub' }); an empty set checks nothing: leave the option out",
      );
    }
    if (anonymous)
      throw refuse(
        `${option}.checks`,
        r.checks,
        'an anonymous rule has no token to take claims from; scope anonymous callers with where, or give the rule a role',
      );
    for (const [field, path] of Object.entries(r.checks as Record<string, unknown>)) {
      if (!entity.field(field))
        throw refuse(
          `${option}.checks`,
          r.checks,
          `${JSON.stringify(field)} is not a field of ${entity.name}; fields: ${entity.fields.map((f) => f.name).join(', ')}`,
        );
      if (field === entity.primaryKey || field === entity.version || field === entity.softDelete)
        throw refuse(
          `${option}.checks.${field}`,
          path,
          `${field} is the entity's ${field === entity.primaryKey ? 'primary key' : field === entity.version ? 'version' : 'soft-delete field'}, which Kit sets itself; bind a field of its own`,
        );
      checks.push({ field, claim: claimPath(`${option}.checks.${field}`, path) });
    }
  }
  if (r.where !== undefined && typeof r.where !== 'function')
    throw refuse(
      `${option}.where`,
      r.where,
      'where is a function (request, operation) => conditions | false',
    );
  const readOnly = fieldList(`${option}.readOnlyFields`, entity, r.readOnlyFields, true);
  const hidden = fieldList(`${option}.hiddenFields`, entity, r.hiddenFields, false);
  return {
    index,
    role: anonymous ? undefined : (r.role as string),
    allow,
    checks,
    hidden: new Set(hidden),
    // A checked field is the claim's, not the body's; a hidden one is not the caller's to write
    // (nor to blank by a PUT that leaves it out): both read-only to the rule's callers.
    readOnly: [...new Set([...readOnly, ...checks.map((c) => c.field), ...hidden])].filter((f) =>
      entity.writable.includes(f),
    ),
    where: r.where as AuthorizationHook | undefined,
  };
}

/**
 * The declaration, checked against the entity and the class's operations.
 * @throws {KitError} `KIT_ERR_AUTOCRUD_AUTHORIZATION` naming the option and its value: an empty rule set, an unknown field or rule option, a malformed claim path, flags the class does not serve, `History` without the read it follows.
 */
export function resolveAuthorization(
  where: string,
  entity: Entity,
  operations: number,
  declared: unknown,
): ResolvedAuthorization | undefined {
  if (declared === undefined) return undefined;
  if (typeof declared !== 'object' || declared === null || Array.isArray(declared))
    throw refuse(where, declared, 'authorization is an object { rolesClaim?, rules: [...] }');
  const d = declared as Record<string, unknown>;
  for (const key of Object.keys(d))
    if (key !== 'rolesClaim' && key !== 'rules')
      throw refuse(
        `${where}.${key}`,
        d[key],
        'not an option of authorization; it takes rolesClaim and rules',
      );
  if (!Array.isArray(d.rules) || d.rules.length === 0)
    throw refuse(
      `${where}.rules`,
      d.rules,
      'an empty rule set allows nothing; declare at least one rule, or leave authorization out',
    );
  const rolesClaim = claimPath(`${where}.rolesClaim`, d.rolesClaim ?? 'roles');
  const rules = (d.rules as unknown[]).map((rule, i) =>
    resolveRule(where, entity, operations, rule, i),
  );
  return { rolesClaim, rules };
}
