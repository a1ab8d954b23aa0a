// Security a group declares (`@EndpointGroup(name, { security })`): validated when the decorator
// runs, written on each route of the group by the group's naming hook, and collected into
// `components.securitySchemes` when the document is built.
import { coreErrors, KitError, show } from './errors.js';

/**
 * An OpenAPI 3.1 security scheme object, as it appears under `components.securitySchemes`.
 *
 * @example
 * ```ts
 * const adminKey: SecuritySchemeObject = { type: 'apiKey', in: 'header', name: 'x-admin-key' };
 * ```
 */
export type SecuritySchemeObject =
  | { type: 'apiKey'; name: string; in: 'header' | 'query' | 'cookie'; description?: string }
  | { type: 'http'; scheme: string; bearerFormat?: string; description?: string }
  | { type: 'oauth2'; flows: Record<string, unknown>; description?: string }
  | { type: 'openIdConnect'; openIdConnectUrl: string; description?: string }
  | { type: 'mutualTLS'; description?: string };

/** The operation extension carrying a group's schemes from the route to `finishDocument` (removed there). */
export const SECURITY_SCHEMES_MARK = 'x-kit-security-schemes';

/** The scheme name Kit declares for `app.kitAuthenticate`; groups may not redefine it. */
const RESERVED = 'bearerAuth';
const NAME = /^[A-Za-z0-9._-]+$/;

function invalid(where: string, value: unknown, expected: string): KitError {
  return new KitError('KIT_ERR_INVALID_GROUP', `${where} = ${show(value)}: expected ${expected}.`);
}

/**
 * Checks a group's `security` option: a record of scheme names (letters, digits, `.`, `_`, `-`)
 * to OpenAPI security scheme objects; `{}` declares the group public.
 */
export function validateSecuritySchemes(
  where: string,
  value: unknown,
): Readonly<Record<string, SecuritySchemeObject>> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid(
      where,
      value,
      "a record of named OpenAPI security schemes, e.g. { adminKey: { type: 'apiKey', in: 'header', name: 'x-admin-key' } }, or {} for a public group",
    );
  }
  const out: Record<string, SecuritySchemeObject> = {};
  for (const [name, scheme] of Object.entries(value as Record<string, unknown>)) {
    if (!NAME.test(name)) throw invalid(`${where} name`, name, 'letters, digits, ".", "_" or "-"');
    if (name === RESERVED)
      throw invalid(
        `${where} name`,
        name,
        `a name other than "${RESERVED}", which Kit declares for app.kitAuthenticate (routes guarded by it are documented already)`,
      );
    const s = (typeof scheme === 'object' && scheme !== null ? scheme : {}) as Record<
      string,
      unknown
    >;
    const ok =
      (s.type === 'apiKey' &&
        typeof s.name === 'string' &&
        s.name !== '' &&
        (s.in === 'header' || s.in === 'query' || s.in === 'cookie')) ||
      (s.type === 'http' && typeof s.scheme === 'string' && s.scheme !== '') ||
      (s.type === 'oauth2' && typeof s.flows === 'object' && s.flows !== null) ||
      (s.type === 'openIdConnect' && typeof s.openIdConnectUrl === 'string') ||
      s.type === 'mutualTLS';
    if (!ok) {
      throw invalid(
        `${where}.${name}`,
        scheme,
        "an OpenAPI security scheme: { type: 'apiKey', in: 'header' | 'query' | 'cookie', name }, { type: 'http', scheme }, { type: 'oauth2', flows }, { type: 'openIdConnect', openIdConnectUrl } or { type: 'mutualTLS' }",
      );
    }
    out[name] = { ...s } as SecuritySchemeObject;
  }
  return Object.freeze(out);
}

/**
 * Adds `from` to `into`. `seen` holds every scheme declared so far, in every group: a name seen
 * with another definition fails start-up naming both places, as the document holds one scheme per name.
 */
export function mergeSecuritySchemes(
  into: Record<string, SecuritySchemeObject>,
  from: Readonly<Record<string, SecuritySchemeObject>>,
  where: string,
  seen: Map<string, { where: string; json: string }>,
): void {
  for (const [name, scheme] of Object.entries(from)) {
    const json = JSON.stringify(scheme);
    const prior = seen.get(name);
    if (prior && prior.json !== json) {
      throw coreErrors.error('KIT_ERR_SECURITY_SCHEME', {
        name,
        first: prior.where,
        second: where,
      });
    }
    if (!prior) seen.set(name, { where, json });
    into[name] = scheme;
  }
}

/** `security` of an operation of a group declaring `schemes`: any one of them (`[]` when none: public). */
export function groupRequirements(
  schemes: Readonly<Record<string, SecuritySchemeObject>>,
): Array<Record<string, string[]>> {
  return Object.keys(schemes).map((name) => ({ [name]: [] }));
}

const groupSecured = new WeakSet<object>();

/** Records that `route`'s `schema.security` was written from its group's declaration, not by hand. */
export function markGroupSecurity(route: object): void {
  groupSecured.add(route);
}

/** Whether `route`'s security came from its group (so `app.kitAuthenticate` adds to it rather than leaving it). */
export function hasGroupSecurity(route: object): boolean {
  return groupSecured.has(route);
}
