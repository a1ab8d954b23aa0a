import {
  createRemoteJWKSet,
  decodeProtectedHeader,
  errors,
  jwksCache,
  jwtVerify,
  type JWKSCacheInput,
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
} from 'jose';
import {
  AUTHORITY_FETCH_TIMEOUT_MS,
  AuthorityUnavailableError,
  type OpenIdDiscovery,
} from './discovery.js';

/**
 * The claims of a verified access token, as `request.user` carries them. `iss`, `aud` and `exp`
 * are always present (verification requires them); every other claim the token carries is kept
 * as is. Add the claims your authority issues by augmentation:
 *
 * @example
 * ```ts
 * declare module '@kit/core' {
 *   interface KitUser {
 *     roles?: string[];
 *   }
 * }
 * app.get('me', { onRequest: app.kitAuthenticate }, async (request) => ({
 *   subject: request.user?.sub,
 *   roles: request.user?.roles ?? [],
 * }));
 * ```
 */
export interface KitUser {
  /** Issuer: equals the discovery document's `issuer`. */
  readonly iss: string;
  /** Audience: one of the configured audiences, or a list containing one. */
  readonly aud: string | readonly string[];
  /** Expiry, seconds since the epoch. */
  readonly exp: number;
  /** Subject. */
  readonly sub?: string;
  /** Not before, seconds since the epoch. */
  readonly nbf?: number;
  /** Issued at, seconds since the epoch. */
  readonly iat?: number;
  /** Token id. */
  readonly jti?: string;
  /** Any other claim of the token. */
  readonly [claim: string]: unknown;
}

/**
 * Asymmetric JWS algorithms accepted: RSA PKCS#1 v1.5, RSA-PSS, ECDSA and EdDSA. `none` and the
 * HMAC family are never accepted, so a token "signed" with the public key as an HMAC secret (key
 * confusion) is refused before any key is looked up.
 */
const ACCEPTED_ALGORITHMS: readonly string[] = Object.freeze([
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
]);

/** What a token carrying a `crit` header parameter is refused with. */
const CRIT_REFUSED = 'The token has a critical header parameter that is not supported';

/** Allowed clock difference with the authority when checking `exp`, `nbf` and `iat`, in seconds. */
const CLOCK_TOLERANCE_SECONDS = 60;
/** A fetched key set is refreshed in the background once it is this old; requests never wait for it. */
const KEYS_REFRESH_MS = 10 * 60 * 1000;
/** A token with an unknown `kid` refetches the key set at most once per this period (jose's cooldown). */
const KEYS_COOLDOWN_MS = 30_000;

/** The token was refused; `description` is safe to send to the client (it never contains the token). */
export class TokenRejectedError extends Error {
  constructor(
    readonly description: string,
    options?: { cause?: unknown },
  ) {
    super(description, options);
    this.name = 'TokenRejectedError';
  }
}

type RemoteKeySet = ReturnType<typeof createRemoteJWKSet>;

/**
 * What the verifier reports about its own exchanges with the authority's key set, so that the
 * `jwt` check and the logs follow what token validation sees.
 */
interface KeySetEvents {
  /** A key set was fetched and is now in use. */
  loaded?(): void;
  /** A key set fetch failed; `background` when it was the periodic refresh no request waited for. */
  failed?(error: AuthorityUnavailableError, background: boolean): void;
}

function keySetUnavailable(err: unknown): AuthorityUnavailableError {
  // Timeouts, refused connections, non-200 answers, malformed key sets: the authority's fault.
  return new AuthorityUnavailableError(
    err instanceof errors.JWKSTimeout ? 'key set fetch timed out' : 'key set fetch failed',
    { cause: err },
  );
}

// The errors a key lookup throws because of the token (its kid or alg), not because of the authority.
function isTokenFault(err: unknown): boolean {
  return (
    err instanceof errors.JWKSNoMatchingKey ||
    err instanceof errors.JWKSMultipleMatchingKeys ||
    err instanceof errors.JOSENotSupported
  );
}

function claimDescription(claim: string | undefined): string {
  switch (claim) {
    case 'nbf':
      return 'The token is not valid yet';
    case 'aud':
      return 'The token audience is not accepted';
    case 'iss':
      return 'The token issuer is not accepted';
    case 'exp':
      return 'The token has no valid expiry';
    case 'iat':
      return 'The token issue time is not valid';
    default:
      return 'A token claim is not valid';
  }
}

/** Maps a jose failure to a client-safe description; authority failures pass through unchanged. */
function classify(err: unknown): Error {
  if (err instanceof AuthorityUnavailableError || err instanceof TokenRejectedError) return err;
  if (err instanceof errors.JWTExpired)
    return new TokenRejectedError('The token expired', { cause: err });
  if (err instanceof errors.JWTClaimValidationFailed)
    return new TokenRejectedError(claimDescription(err.claim), { cause: err });
  if (err instanceof errors.JWSSignatureVerificationFailed)
    return new TokenRejectedError('The token signature is not valid', { cause: err });
  if (err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported) {
    return new TokenRejectedError('The token signing algorithm is not accepted', { cause: err });
  }
  if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) {
    return new TokenRejectedError('The token signing key is unknown', { cause: err });
  }
  if (
    err instanceof errors.JWSInvalid ||
    err instanceof errors.JWTInvalid ||
    err instanceof errors.JWKInvalid
  ) {
    return new TokenRejectedError('The token is malformed', { cause: err });
  }
  // Anything else (a crypto failure on a strange key, a bug): refuse rather than let a request through.
  return new TokenRejectedError('The token is not valid', { cause: err });
}

/**
 * Verifies bearer tokens of one authority. The discovery document names the issuer and the key set
 * (JWKS); the key set is jose's `createRemoteJWKSet`, used with these semantics:
 *
 * - first use fetches it (requests arriving meanwhile share that fetch);
 * - a token whose `kid` is not in the set refetches it, at most once per {@link KEYS_COOLDOWN_MS}
 *   counted from the last *successful* fetch, so a key rotation is picked up on the first token
 *   signed with the new key and a flood of made-up `kid`s costs one fetch per 30 s;
 * - jose's own expiry is turned off (`cacheMaxAge: Infinity`) and Kit refreshes in the background
 *   every {@link KEYS_REFRESH_MS} instead: a request never waits on a refresh, a key removed by
 *   the authority stops being accepted within about ten minutes, and while the authority is down
 *   the keys fetched last keep validating tokens (jose keeps the old set when a fetch fails).
 */
export class TokenVerifier {
  #keys:
    { uri: string; set: RemoteKeySet; refreshedAt: number; getKey: JWTVerifyGetKey } | undefined;
  /** jose's options for the current issuer: built when the issuer is first seen, not per request. */
  #options: (JWTVerifyOptions & { issuer: string }) | undefined;
  readonly #audiences: string[];

  constructor(
    readonly discovery: OpenIdDiscovery,
    readonly audiences: readonly string[],
    private readonly events: KeySetEvents = {},
  ) {
    this.#audiences = [...audiences];
  }

  /** True once a key set was fetched: tokens can be validated even if the authority goes down. */
  hasSigningKeys(): boolean {
    return this.heldKeySet() !== undefined;
  }

  /** The key set in use (a JWKS), or `undefined` before the first successful fetch. */
  heldKeySet(): unknown {
    return this.#keys?.set.jwks();
  }

  /** Returns the verified claims, or throws `TokenRejectedError` (401) or `AuthorityUnavailableError` (503). */
  async verify(token: string): Promise<KitUser> {
    // Structure and algorithm first: a malformed, `none` or HMAC token never costs a network call.
    if (token.split('.').length !== 3) throw new TokenRejectedError('The token is malformed');
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(token);
    } catch (err) {
      throw new TokenRejectedError('The token is malformed', { cause: err });
    }
    if (typeof header.alg !== 'string' || !ACCEPTED_ALGORITHMS.includes(header.alg)) {
      throw new TokenRejectedError('The token signing algorithm is not accepted');
    }
    // RFC 7515 4.1.11: a recipient must refuse a token whose `crit` names an extension it does not
    // understand. Kit understands none (jose's `b64` is for detached payloads, never a JWT), so any
    // `crit` is refused here, before a network call, and described as what it is.
    if (header.crit !== undefined) throw new TokenRejectedError(CRIT_REFUSED);

    const metadata = await this.discovery.get();
    let options = this.#options;
    if (options?.issuer !== metadata.issuer) {
      options = {
        issuer: metadata.issuer,
        audience: this.#audiences,
        algorithms: [...ACCEPTED_ALGORITHMS],
        requiredClaims: ['exp'],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
      };
      this.#options = options;
    }
    const getKey = this.#getKey(metadata.jwksUri);
    try {
      const { payload } = await jwtVerify(token, getKey, options);
      return payload as KitUser;
    } catch (err) {
      // A token without `kid` while the set holds several keys of its type: try each (jose leaves this to the caller).
      if (err instanceof errors.JWKSMultipleMatchingKeys)
        return this.#verifyWithEach(token, err, options);
      throw classify(err);
    }
  }

  async #verifyWithEach(
    token: string,
    candidates: errors.JWKSMultipleMatchingKeys,
    options: JWTVerifyOptions,
  ): Promise<KitUser> {
    let last: unknown = candidates;
    for await (const key of candidates) {
      try {
        return (await jwtVerify(token, key, options)).payload as KitUser;
      } catch (err) {
        last = err;
        // Claim failures are the same for every key once the signature verified: stop there.
        if (!(err instanceof errors.JWSSignatureVerificationFailed)) break;
      }
    }
    throw classify(last);
  }

  #getKey(jwksUri: string): JWTVerifyGetKey {
    if (this.#keys?.uri === jwksUri) return this.#keys.getKey;
    // First use, or the discovery document named another key set (rare): start over with it.
    // jose writes `uat` into this object after every fetch it applies: the only way to tell, after
    // a lookup, whether it fetched (a lookup that found the key in the held set fetches nothing).
    const applied: { uat?: number } = {};
    const set = createRemoteJWKSet(new URL(jwksUri), {
      cacheMaxAge: Number.POSITIVE_INFINITY,
      cooldownDuration: KEYS_COOLDOWN_MS,
      timeoutDuration: AUTHORITY_FETCH_TIMEOUT_MS,
      [jwksCache]: applied as JWKSCacheInput,
    });
    const keys = {
      uri: jwksUri,
      set,
      refreshedAt: Date.now(),
      getKey: undefined as unknown as JWTVerifyGetKey,
    };
    keys.getKey = async (header, token) => {
      if (Date.now() - keys.refreshedAt >= KEYS_REFRESH_MS && !keys.set.reloading) {
        keys.refreshedAt = Date.now();
        keys.set.reload().then(
          () => this.events.loaded?.(),
          (err: unknown) => this.events.failed?.(keySetUnavailable(err), true),
        );
      }
      const before = applied.uat;
      try {
        return await keys.set(header, token);
      } catch (err) {
        if (isTokenFault(err)) throw err;
        const unavailable = keySetUnavailable(err);
        this.events.failed?.(unavailable, false);
        throw unavailable;
      } finally {
        if (applied.uat !== before) this.events.loaded?.();
      }
    };
    this.#keys = keys;
    return keys.getKey;
  }
}
