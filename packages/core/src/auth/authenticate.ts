import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { KitError } from '../shared/errors.js';
import { sendProblem } from '../problem/details.js';
import type { HealthChecksBuilder } from '../health/builder.js';
import type { LifecyclePhases } from '../lifecycle/phases.js';
import { AuthorityUnavailableError, OpenIdDiscovery } from './discovery.js';
import { JWT_HEALTH_CHECK_NAME, JwtAuthorityHealthCheck } from './health.js';
import { BEARER_SECURITY_SCHEME, type JwtOptions } from './options.js';
import { fastifyContextHooks, type ContextHooksReader } from '../internals/index.js';
import { hasGroupSecurity } from '../shared/security-schemes.js';
import { TokenRejectedError, TokenVerifier, type KitUser } from './verifier.js';
import { redactError } from '../shared/secrets.js';

/**
 * The hook `app.kitAuthenticate` is: it reads `Authorization: Bearer <token>`, verifies the token
 * and sets `request.user`, or answers 401 (`WWW-Authenticate: Bearer ...`, a problem-details body)
 * and stops the request. Usable as a route's `onRequest` (or `preValidation`, `preHandler`) and as a
 * context-wide hook.
 *
 * @example
 * ```ts
 * // one route
 * app.get('me', { onRequest: app.kitAuthenticate }, async (request) => request.user);
 * // every route of an endpoint group (inside addRoutes)
 * app.addHook('onRequest', app.kitAuthenticate);
 * ```
 */
export type KitAuthenticateHook = (
  request: FastifyRequest,
  reply: FastifyReply,
) => Promise<unknown>;

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Verifies the request's bearer token (see `KitAuthenticateHook`). Present on every Kit app;
     * reading it when `opt.configureJwt` was not called throws `KIT_ERR_JWT_NOT_CONFIGURED`, so a
     * route that asks for authentication never starts unprotected.
     */
    kitAuthenticate: KitAuthenticateHook;
  }
  interface FastifyRequest {
    /** The verified token claims, set by `app.kitAuthenticate`; `undefined` on routes it does not guard. */
    user?: KitUser;
  }
}

const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;
const GUARD_STAGES = ['onRequest', 'preParsing', 'preValidation', 'preHandler'] as const;
/** `Retry-After` of a 503 while the authority is unreachable: about when discovery is retried. */
const RETRY_AFTER_SECONDS = 5;

/**
 * `undefined`: no bearer credentials at all (no header, or another scheme such as Basic);
 * `null`: `Bearer` with something that is not a token68; otherwise the token.
 */
function bearerToken(header: string | undefined): string | null | undefined {
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer(?:[ \t]+(.*))?$/i.exec(header.trim());
  if (!match) return undefined;
  const token = (match[1] ?? '').trim();
  return token !== '' && TOKEN68.test(token) ? token : null;
}

function unauthorized(reply: FastifyReply, description: string | undefined): FastifyReply {
  // RFC 6750 3.1: a request without credentials gets the bare challenge, no error code.
  const challenge =
    description === undefined
      ? 'Bearer'
      : `Bearer error="invalid_token", error_description="${description}"`;
  return sendProblem(
    reply,
    {
      type: 'about:blank',
      title: 'Unauthorized',
      status: 401,
      detail: description === undefined ? 'A bearer token is required.' : `${description}.`,
    },
    { 'www-authenticate': challenge },
  );
}

function isGuarded(
  route: RouteOptions,
  instance: FastifyInstance,
  hook: KitAuthenticateHook,
  contextHooks: ContextHooksReader | undefined,
): boolean {
  for (const stage of GUARD_STAGES) {
    const own: unknown = route[stage];
    if ((Array.isArray(own) ? own : [own]).includes(hook)) return true;
    // A context-wide `addHook(stage, app.kitAuthenticate)`: Fastify shows it only through its internals.
    if (contextHooks?.(instance, stage)?.includes(hook)) return true;
  }
  return false;
}

function notConfigured(): never {
  throw new KitError(
    'KIT_ERR_JWT_NOT_CONFIGURED',
    'app.kitAuthenticate was used, but token validation is not configured: call opt.configureJwt(authority, audiences) in addKit(app, (opt) => ...).',
  );
}

/**
 * Sets up token validation for one Kit app: the `kitAuthenticate` decoration (always present; a
 * getter that throws `KIT_ERR_JWT_NOT_CONFIGURED` without `configureJwt`), `request.user`, the
 * `jwt` health check, and the `security` of guarded routes in the OpenAPI document (a `ready`
 * step).
 */
export function installJwt(
  app: FastifyInstance,
  jwt: JwtOptions | undefined,
  healthChecks: HealthChecksBuilder,
  phases: LifecyclePhases,
): void {
  if (!jwt) {
    app.decorate('kitAuthenticate', { getter: notConfigured });
    return;
  }

  let warnedIssuer = false;
  // Every exchange token validation has with the authority also refreshes the `jwt` check, so
  // /healthz follows what requests see without a request of its own (`check` is declared below;
  // it exists before any event can fire: nothing is fetched before the first token or probe).
  const discovery = new OpenIdDiscovery(jwt.authority, {
    loaded(metadata) {
      // Once: health probes refetch the document every 30 s.
      if (
        !warnedIssuer &&
        metadata.issuer.replace(/\/+$/, '') !== jwt.authority.replace(/\/+$/, '')
      ) {
        warnedIssuer = true;
        app.log.warn(
          { authority: jwt.authority, issuer: metadata.issuer },
          'kit: the discovery document names an issuer other than the configured authority; tokens must carry that issuer',
        );
      }
      check.reachable();
    },
    failed(err, retryInMs) {
      app.log.warn(
        { err: redactError(err.cause ?? err), reason: err.reason, retryInMs },
        'kit: the token authority discovery document could not be fetched',
      );
      check.unreachable('discovery document', err);
    },
  });
  const verifier = new TokenVerifier(discovery, jwt.audiences, {
    loaded: () => check.reachable(),
    failed(err, background) {
      if (background)
        app.log.warn(
          { err: redactError(err.cause ?? err) },
          'kit: background refresh of the token signing keys failed; the keys fetched earlier stay in use',
        );
      check.unreachable('signing keys', err);
    },
  });
  const check = new JwtAuthorityHealthCheck(discovery, () => verifier.heldKeySet());

  const kitAuthenticate: KitAuthenticateHook = async function kitAuthenticate(request, reply) {
    const token = bearerToken(request.headers.authorization);
    if (token === undefined) return unauthorized(reply, undefined);
    if (token === null) return unauthorized(reply, 'The token is malformed');
    try {
      request.user = await verifier.verify(token);
      return undefined;
    } catch (err) {
      if (err instanceof AuthorityUnavailableError) {
        request.log.warn(
          { reason: err.reason },
          'kit: bearer token not verified, the token authority is unavailable',
        );
        return sendProblem(
          reply,
          {
            type: 'about:blank',
            title: 'Service Unavailable',
            status: 503,
            detail: 'The token authority cannot be reached; try again later.',
          },
          { 'retry-after': String(RETRY_AFTER_SECONDS) },
        );
      }
      const rejected =
        err instanceof TokenRejectedError
          ? err
          : new TokenRejectedError('The token is not valid', { cause: err });
      const code = (rejected.cause as { code?: unknown } | undefined)?.code;
      request.log.debug({ reason: rejected.description, code }, 'kit: bearer token rejected');
      return unauthorized(reply, rejected.description);
    }
  };

  app.decorate('kitAuthenticate', { getter: () => kitAuthenticate });
  if (!app.hasRequestDecorator('user')) app.decorateRequest('user', undefined);

  if (healthChecks.has(JWT_HEALTH_CHECK_NAME)) {
    throw new KitError(
      'KIT_ERR_DUPLICATE_HEALTH_CHECK',
      `A health check named '${JWT_HEALTH_CHECK_NAME}' is already registered; that name is the check configureJwt adds.`,
    );
  }
  healthChecks.addCheck(JWT_HEALTH_CHECK_NAME, check);

  // OpenAPI: every route the hook guards declares `security: [{ bearerAuth: [] }]`, decided at
  // `ready` when all hooks are known and before the document is first built.
  const routes: Array<{ route: RouteOptions; instance: FastifyInstance }> = [];
  app.addHook('onRoute', function trackRoute(this: FastifyInstance, route) {
    routes.push({ route, instance: this });
  });
  phases.add('ready', {
    name: 'bearer security in the OpenAPI document',
    run: documentGuardedRoutes,
  });
  function documentGuardedRoutes(): void {
    const contextHooks = fastifyContextHooks(app);
    if (!contextHooks) {
      app.log.warn(
        'kit: this Fastify version hides context hooks; routes guarded by addHook(app.kitAuthenticate) appear public in the OpenAPI document (route-level hooks are still seen).',
      );
    }
    for (const { route, instance } of routes) {
      const schema = route.schema as { security?: Array<Record<string, string[]>> } | undefined;
      const fromGroup = hasGroupSecurity(route);
      if (
        (schema?.security !== undefined && !fromGroup) ||
        !isGuarded(route, instance, kitAuthenticate, contextHooks)
      )
        continue;
      // A group that declared its own scheme and also runs kitAuthenticate needs both: the bearer
      // token joins each of its requirements.
      const bearer = { [BEARER_SECURITY_SCHEME]: [] };
      const declared = fromGroup ? (schema?.security ?? []) : [];
      const security =
        declared.length > 0
          ? declared.map((requirement) => ({ ...requirement, ...bearer }))
          : [bearer];
      route.schema = { ...route.schema, security } as RouteOptions['schema'];
    }
    routes.length = 0;
  }
}
