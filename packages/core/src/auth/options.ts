import { invalidOption } from '../errors.js';

/** Token validation settings recorded by `opt.configureJwt(authority, audiences)`. */
export interface JwtOptions {
  /** Absolute http(s) URL of the OpenID authority (issuer). */
  readonly authority: string;
  /** Accepted `aud` values; a token must carry at least one. */
  readonly audiences: readonly string[];
}

/** Throws `KIT_ERR_INVALID_OPTION` when the authority is not an absolute http(s) URL or audiences is empty. */
export function validateJwtOptions(authority: unknown, audiences: unknown): JwtOptions {
  let url: URL | undefined;
  try {
    url = typeof authority === 'string' ? new URL(authority) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password) {
    throw invalidOption('configureJwt(authority)', authority, 'an absolute http:// or https:// URL without credentials');
  }
  if (!Array.isArray(audiences) || audiences.length === 0 || audiences.some((a) => typeof a !== 'string' || a.length === 0)) {
    throw invalidOption('configureJwt(audiences)', audiences, 'a non-empty array of non-empty strings');
  }
  return { authority: authority as string, audiences: [...(audiences as string[])] };
}
