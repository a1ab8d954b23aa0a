import { invalidOption } from '../shared/errors.js';

/**
 * Token validation settings recorded by `opt.configureJwt(authority, audiences)`, readable as
 * `app.kit.options.jwt` (`undefined` when JWT is not configured).
 *
 * @example
 * ```ts
 * addKit(app, (opt) => opt.configureJwt('https://login.example.com/tenant', ['api://orders']));
 * app.kit.options.jwt; // { authority: 'https://login.example.com/tenant', audiences: ['api://orders'] }
 * ```
 */
export interface JwtOptions {
  /** Absolute http(s) URL of the OpenID authority (issuer). */
  readonly authority: string;
  /** Accepted `aud` values; a token must carry at least one. */
  readonly audiences: readonly string[];
}

/**
 * Throws `KIT_ERR_INVALID_OPTION` when the authority is not an absolute http(s) URL (credentials,
 * a query or a fragment are refused too: the discovery URL is built by appending
 * `/.well-known/openid-configuration` to the authority's path) or when audiences is empty.
 */
export function validateJwtOptions(authority: unknown, audiences: unknown): JwtOptions {
  let url: URL | undefined;
  try {
    url = typeof authority === 'string' ? new URL(authority) : undefined;
  } catch {
    url = undefined;
  }
  if (
    !url ||
    (url.protocol !== 'https:' && url.protocol !== 'http:') ||
    url.username ||
    url.password ||
    url.search ||
    url.hash
  ) {
    // The message goes to logs: credentials in the value are masked.
    const shown =
      url && (url.username || url.password)
        ? `${url.protocol}//***@${url.host}${url.pathname}`
        : authority;
    throw invalidOption(
      'configureJwt(authority)',
      shown,
      'an absolute http:// or https:// URL without credentials, query or fragment',
    );
  }
  if (
    !Array.isArray(audiences) ||
    audiences.length === 0 ||
    audiences.some((a) => typeof a !== 'string' || a.length === 0)
  ) {
    throw invalidOption(
      'configureJwt(audiences)',
      audiences,
      'a non-empty array of non-empty strings',
    );
  }
  return { authority: authority as string, audiences: [...new Set(audiences as string[])] };
}

/** Name of the OpenAPI security scheme Kit declares for routes guarded by `app.kitAuthenticate`. */
export const BEARER_SECURITY_SCHEME = 'bearerAuth';

/** The OpenAPI definition of {@link BEARER_SECURITY_SCHEME}. */
export const BEARER_SECURITY_SCHEME_OBJECT = Object.freeze({
  type: 'http',
  scheme: 'bearer',
  bearerFormat: 'JWT',
  description:
    'An access token issued by the configured OpenID authority, sent as `Authorization: Bearer <token>`.',
});
