/**
 * The authority's OpenID discovery document (`{authority}/.well-known/openid-configuration`):
 * fetched lazily, cached, refreshed in the background, and retried with a backoff when the
 * authority cannot be reached. Nothing here throws past its callers or crashes the process.
 */

/** How long a fetched discovery document is used before it is refreshed in the background. */
const DISCOVERY_REFRESH_MS = 12 * 60 * 60 * 1000;
/** First wait after a failed fetch; doubled per consecutive failure up to {@link DISCOVERY_RETRY_MAX_MS}. */
const DISCOVERY_RETRY_MIN_MS = 1000;
/** Longest wait between two fetch attempts while the authority is down. */
const DISCOVERY_RETRY_MAX_MS = 30_000;
/** Limit of one HTTP exchange with the authority (discovery document or key set). */
export const AUTHORITY_FETCH_TIMEOUT_MS = 5000;
/** Largest discovery document or key set read; providers send a few kilobytes. */
const MAX_DOCUMENT_BYTES = 512 * 1024;

/** The fields Kit reads from the discovery document. */
interface OpenIdMetadata {
  /** The `issuer` a token's `iss` must equal. */
  readonly issuer: string;
  /** Where the signing keys are published. */
  readonly jwksUri: string;
}

/**
 * The authority could not be reached or answered nonsense. `reason` is generic on purpose (no URL,
 * no address): it may reach a health report. The original error, which may name the address, is
 * kept as `cause` for logs only.
 */
export class AuthorityUnavailableError extends Error {
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`Token authority unavailable: ${reason}`, options);
    this.name = 'AuthorityUnavailableError';
  }
}

/** `https://login.example.com/tenant/` -> `https://login.example.com/tenant/.well-known/openid-configuration`. */
function discoveryUrlOf(authority: string): string {
  const url = new URL(authority);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  return url.href;
}

function timedOut(err: unknown): boolean {
  const name = (err as { name?: unknown } | null)?.name;
  return name === 'TimeoutError' || name === 'AbortError';
}

/**
 * GETs a JSON document from the authority: no redirects (as jose does for key sets), a timeout, a
 * size cap. Every failure is an `AuthorityUnavailableError` with a generic reason.
 */
export async function fetchAuthorityJson(url: string, signal?: AbortSignal): Promise<unknown> {
  const timeout = AbortSignal.timeout(AUTHORITY_FETCH_TIMEOUT_MS);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  let response: Response;
  try {
    response = await fetch(url, {
      signal: combined,
      redirect: 'manual',
      headers: { accept: 'application/json' },
    });
  } catch (err) {
    throw new AuthorityUnavailableError(timedOut(err) ? 'timed out' : 'connection failed', {
      cause: err,
    });
  }
  if (response.status !== 200) {
    await response.body?.cancel().catch(() => undefined);
    throw new AuthorityUnavailableError(`HTTP status ${response.status}`);
  }
  let text = '';
  try {
    const reader = response.body?.getReader();
    const decoder = new TextDecoder();
    let size = 0;
    for (;;) {
      const chunk = reader ? await reader.read() : { done: true as const, value: undefined };
      if (chunk.done) break;
      size += chunk.value.byteLength;
      if (size > MAX_DOCUMENT_BYTES) {
        await reader?.cancel().catch(() => undefined);
        throw new AuthorityUnavailableError('response too large');
      }
      text += decoder.decode(chunk.value, { stream: true });
    }
    text += decoder.decode();
  } catch (err) {
    if (err instanceof AuthorityUnavailableError) throw err;
    throw new AuthorityUnavailableError(timedOut(err) ? 'timed out' : 'connection failed', {
      cause: err,
    });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new AuthorityUnavailableError('response is not JSON', { cause: err });
  }
}

function httpUrl(value: unknown): URL | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url : undefined;
  } catch {
    return undefined;
  }
}

/** Reads `issuer` and `jwks_uri`; a key set served over plain http for an https authority is refused. */
function parseDiscoveryDocument(document: unknown, authority: string): OpenIdMetadata {
  const doc = (typeof document === 'object' && document !== null ? document : {}) as Record<
    string,
    unknown
  >;
  if (typeof doc.issuer !== 'string' || doc.issuer === '')
    throw new AuthorityUnavailableError('discovery document has no issuer');
  const jwks = httpUrl(doc.jwks_uri);
  if (!jwks) throw new AuthorityUnavailableError('discovery document has no valid jwks_uri');
  if (jwks.protocol === 'http:' && new URL(authority).protocol === 'https:') {
    throw new AuthorityUnavailableError('discovery document downgrades jwks_uri to http');
  }
  return { issuer: doc.issuer, jwksUri: jwks.href };
}

/** Receives notable events; wired to the Fastify logger. */
interface DiscoveryEvents {
  loaded?(metadata: OpenIdMetadata): void;
  failed?(error: AuthorityUnavailableError, retryInMs: number): void;
}

/**
 * The discovery document of one authority. `get()` is what token validation calls: the cached
 * document when there is one (refreshed in the background once it is {@link DISCOVERY_REFRESH_MS}
 * old, the old one kept if the refresh fails), otherwise one fetch shared by every waiting request.
 * After a failure, requests fail at once until the retry time (1 s, doubling up to 30 s) instead of
 * each waiting on a dead authority.
 */
export class OpenIdDiscovery {
  readonly url: string;
  #current: { metadata: OpenIdMetadata; fetchedAt: number } | undefined;
  #pending: Promise<OpenIdMetadata> | undefined;
  #failures = 0;
  #retryAt = 0;
  #lastError: AuthorityUnavailableError | undefined;

  constructor(
    readonly authority: string,
    private readonly events: DiscoveryEvents = {},
  ) {
    this.url = discoveryUrlOf(authority);
  }

  /** The metadata token validation uses. Throws `AuthorityUnavailableError` when there is none. */
  async get(): Promise<OpenIdMetadata> {
    const now = Date.now();
    const current = this.#current;
    if (current) {
      if (
        now - current.fetchedAt >= DISCOVERY_REFRESH_MS &&
        now >= this.#retryAt &&
        !this.#pending
      ) {
        this.load().catch(() => undefined); // reported through events; the cached document stays in use
      }
      return current.metadata;
    }
    if (this.#pending) return this.#pending;
    if (now < this.#retryAt && this.#lastError) throw this.#lastError;
    return this.load();
  }

  /** Fetches the document now, sharing a fetch already in flight. */
  load(): Promise<OpenIdMetadata> {
    this.#pending ??= this.fetch().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  /** Fetches the document now (used by the health probe with its own signal); success updates the cache. */
  async fetch(signal?: AbortSignal): Promise<OpenIdMetadata> {
    try {
      const metadata = parseDiscoveryDocument(
        await fetchAuthorityJson(this.url, signal),
        this.authority,
      );
      this.#current = { metadata, fetchedAt: Date.now() };
      this.#failures = 0;
      this.#retryAt = 0;
      this.#lastError = undefined;
      this.events.loaded?.(metadata);
      return metadata;
    } catch (err) {
      const error =
        err instanceof AuthorityUnavailableError
          ? err
          : new AuthorityUnavailableError('unexpected error', { cause: err });
      this.#failures += 1;
      const wait = Math.min(
        DISCOVERY_RETRY_MAX_MS,
        DISCOVERY_RETRY_MIN_MS * 2 ** (this.#failures - 1),
      );
      this.#retryAt = Date.now() + wait;
      this.#lastError = error;
      this.events.failed?.(error, wait);
      throw error;
    }
  }
}
