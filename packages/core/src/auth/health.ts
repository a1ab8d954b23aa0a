import { HealthCheckResult, type HealthCheckContext, type IHealthCheck } from '../health/result.js';
import {
  AuthorityUnavailableError,
  fetchAuthorityJson,
  type OpenIdDiscovery,
} from './discovery.js';

/** Name of the check `configureJwt` registers. */
export const JWT_HEALTH_CHECK_NAME = 'jwt';
/** How long one probe's result is reused: probes hit the authority at most twice per 30 s. */
const JWT_HEALTH_CACHE_MS = 30_000;

// Keys usable for verifying signatures: not marked for encryption only.
function signingKeyCount(jwks: unknown): number {
  const keys = (jwks as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new AuthorityUnavailableError('key set is malformed');
  return keys.filter(
    (k): k is Record<string, unknown> =>
      typeof k === 'object' && k !== null && typeof k.kty === 'string' && k.use !== 'enc',
  ).length;
}

/** Where an exchange with the authority failed: the first fetch, or the key set it names. */
type AuthorityStage = 'discovery document' | 'signing keys';

/**
 * The `jwt` check: can the token authority be reached? It fetches the discovery document (the same
 * fetch token validation uses, so a success also refreshes the cached document) and the key set it
 * names, and checks the set holds a signing key. Its result is kept {@link JWT_HEALTH_CACHE_MS},
 * so frequent probes do not become load on the authority; but every exchange token validation
 * itself has with the authority (first use, an unknown `kid`, the background refreshes) replaces
 * the kept result at once, so the report says what requests see without costing a request more.
 *
 * - reachable: `healthy`;
 * - unreachable but keys fetched earlier are still held, so tokens keep being validated: `degraded`
 *   (the report stays 200: pulling every replica out of the load balancer would not bring the
 *   authority back, and requests are still served);
 * - unreachable and no keys were ever fetched, so no token can be validated: `unhealthy` (503).
 *
 * Descriptions, data and the exception message are generic: never the authority's URL or address.
 */
export class JwtAuthorityHealthCheck implements IHealthCheck {
  #cached: { at: number; result: HealthCheckResult } | undefined;
  #pending: Promise<HealthCheckResult> | undefined;

  /**
   * @param heldKeySet The key set token validation holds (`undefined` before the first fetch).
   */
  constructor(
    private readonly discovery: OpenIdDiscovery,
    private readonly heldKeySet: () => unknown,
  ) {}

  checkHealth({ signal }: HealthCheckContext): Promise<HealthCheckResult> {
    const cached = this.#cached;
    if (cached && Date.now() - cached.at < JWT_HEALTH_CACHE_MS)
      return Promise.resolve(cached.result);
    this.#pending ??= this.#probe(signal)
      .then((result) => {
        this.#cached = { at: Date.now(), result };
        return result;
      })
      .finally(() => {
        this.#pending = undefined;
      });
    return this.#pending;
  }

  /**
   * Token validation reached the authority: a discovery document or a key set was fetched. The
   * result is `healthy` with the held set's key count; a discovery document fetched while no key set
   * is held yet changes nothing (the key set fetch that follows decides).
   */
  reachable(): void {
    const held = this.heldKeySet();
    if (held === undefined) return;
    let signingKeys: number;
    try {
      signingKeys = signingKeyCount(held);
    } catch (err) {
      this.unreachable('signing keys', err as AuthorityUnavailableError);
      return;
    }
    if (signingKeys === 0)
      this.unreachable(
        'signing keys',
        new AuthorityUnavailableError('key set holds no signing key'),
      );
    else
      this.#keep(HealthCheckResult.healthy('The token authority is reachable.', { signingKeys }));
  }

  /** Token validation failed to reach the authority at `stage`: `degraded` or `unhealthy` from now on. */
  unreachable(stage: AuthorityStage, err: unknown): void {
    this.#keep(this.#failure(stage, err));
  }

  #keep(result: HealthCheckResult): void {
    this.#cached = { at: Date.now(), result };
  }

  async #probe(signal: AbortSignal): Promise<HealthCheckResult> {
    let stage: AuthorityStage = 'discovery document';
    try {
      const metadata = await this.discovery.fetch(signal);
      stage = 'signing keys';
      const signingKeys = signingKeyCount(await fetchAuthorityJson(metadata.jwksUri, signal));
      if (signingKeys === 0) throw new AuthorityUnavailableError('key set holds no signing key');
      return HealthCheckResult.healthy('The token authority is reachable.', { signingKeys });
    } catch (err) {
      return this.#failure(stage, err);
    }
  }

  #failure(stage: AuthorityStage, err: unknown): HealthCheckResult {
    const reason = err instanceof AuthorityUnavailableError ? err.reason : 'unexpected error';
    // A fresh error without cause or stack frames of fetch internals: the original may name the address.
    const exception = new Error(`${stage}: ${reason}`);
    exception.stack = `Error: ${exception.message}`;
    const data = { stage, reason };
    return this.heldKeySet() !== undefined
      ? HealthCheckResult.degraded(
          'The token authority is unreachable; signing keys fetched earlier are still in use.',
          exception,
          data,
        )
      : HealthCheckResult.unhealthy(
          'The token authority is unreachable; tokens cannot be validated.',
          exception,
          data,
        );
  }
}
