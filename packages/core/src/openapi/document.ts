import { fastifySwagger, type SwaggerOptions } from '@fastify/swagger';
import { fastifySwaggerUi } from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import {
  BEARER_SECURITY_SCHEME,
  BEARER_SECURITY_SCHEME_OBJECT,
  type JwtOptions,
} from '../auth/options.js';
import { hostPackage } from '../shared/host-package.js';
import {
  addProblemResponses,
  answersProblems,
  declareProblemComponents,
  PROBLEM_MARK,
  unauthorizedResponse,
} from '../problem/openapi.js';
import { NamedSchemas } from './schemas.js';
import { SECURITY_SCHEMES_MARK } from '../shared/security-schemes.js';

/**
 * The operationIds as the endpoint mapping decided them (`RouteTable` in endpoints/): read
 * through this shape so that the document, a floor below the endpoints, does not import them.
 */
interface OperationIds {
  /** The id an operation of `method` ends up with in the document. */
  operationIdOf(operationId: string, method: string): string;
}

/** What the document reads of Kit's options (`ResolvedKitOptions` is one). */
interface OpenApiSettings {
  readonly openApiPath: string | false;
  readonly docsPath: string | false;
  readonly openApiInfo: Readonly<{ title?: string; version?: string; description?: string }>;
  readonly applicationVersion: string | undefined;
  readonly jwt: JwtOptions | undefined;
}

/** The name the document gives Fastify's `*` wildcard parameter. */
const WILDCARD = 'wildcard';

type Operation = {
  parameters?: Array<{ in?: string; name?: string } & Record<string, unknown>>;
  operationId?: string;
  tags?: string[];
  summary?: string;
  security?: Array<Record<string, unknown>>;
  responses?: Record<string, unknown>;
  [PROBLEM_MARK]?: boolean;
  [SECURITY_SCHEMES_MARK]?: Record<string, unknown>;
};
type Document = {
  paths?: Record<string, Record<string, unknown>>;
  tags?: Array<{ name: string } & Record<string, unknown>>;
  servers?: unknown[];
  security?: unknown[];
};
type Components = { securitySchemes?: Record<string, unknown> } & Record<string, unknown>;

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/**
 * Gives each method of a multi-method route its own operationId, drops the trailing `/` Fastify
 * leaves on a group root (`'/'` is registered as both `/api/user` and `/api/user/`), and lists
 * every tag in use at the top level, keeping descriptions the host supplied. What the host left
 * out and `redocly lint` requires gets a plain default: a summary `GET /path`, a root
 * `security: []` when some operation's security is unknown (never on the operation: Kit cannot
 * tell a public route from one a host hook guards), and a relative server `/`. Schemes groups
 * declare go into `components.securitySchemes`. Operations guarded by
 * `app.kitAuthenticate` (their `security` names the bearer scheme) also get the 401 answer, and
 * operations whose errors Kit answers as problem details get the `4XX`/`5XX` problem responses.
 */
export function finishDocument<T extends Document>(
  document: T,
  table: OperationIds,
  named?: NamedSchemas,
): T {
  const tags = new Map<string, { name: string } & Record<string, unknown>>();
  for (const tag of document.tags ?? []) tags.set(tag.name, tag);
  const paths: Record<string, Record<string, unknown>> = {};
  let bearerUsed = false;
  let problemSchemaUsed = false;
  let securityUnknown = false;
  const groupSchemes: Record<string, unknown> = {};
  let problemResponsesUsed = false;
  for (const [url, item] of Object.entries(document.paths ?? {})) {
    const slashless = url.length > 1 && url.endsWith('/') ? url.slice(0, -1) : url;
    // Fastify's wildcard becomes a path parameter named '*', which OpenAPI tools reject.
    const trimmed = slashless.replace('{*}', `{${WILDCARD}}`);
    const out: Record<string, unknown> = {};
    for (const [method, value] of Object.entries(item)) {
      if (!METHODS.has(method) || typeof value !== 'object' || value === null) {
        out[method] = value;
        continue;
      }
      // swagger shares one operation object between the methods of a route: copy before renaming.
      const op = { ...(value as Operation) };
      if (trimmed !== slashless && op.parameters) {
        op.parameters = op.parameters.map((p) =>
          p.in === 'path' && p.name === '*' ? { ...p, name: WILDCARD } : p,
        );
      }
      if (op.operationId)
        op.operationId = table.operationIdOf(op.operationId, method.toUpperCase());
      op.summary ??= `${method.toUpperCase()} ${trimmed}`;
      if (op[SECURITY_SCHEMES_MARK]) {
        Object.assign(groupSchemes, op[SECURITY_SCHEMES_MARK]);
        delete op[SECURITY_SCHEMES_MARK];
      }
      if (op.security === undefined) securityUnknown = true;
      if (op.security?.some((requirement) => BEARER_SECURITY_SCHEME in requirement)) {
        bearerUsed = true;
        if (op.responses && !('401' in op.responses))
          op.responses = { ...op.responses, 401: unauthorizedResponse(true) };
        problemSchemaUsed = true;
      }
      if (op[PROBLEM_MARK]) {
        delete op[PROBLEM_MARK];
        op.responses = addProblemResponses(op.responses ?? {});
        problemResponsesUsed = true;
      }
      for (const tag of op.tags ?? []) if (!tags.has(tag)) tags.set(tag, { name: tag });
      out[method] = op;
    }
    // Merge into the slash-less path item, unless a route there has the same method (then the
    // host really declared two routes, '/x' and '/x/').
    const existing = paths[trimmed];
    if (existing && Object.keys(out).some((m) => METHODS.has(m) && m in existing))
      paths[url.replace('{*}', `{${WILDCARD}}`)] = out;
    else paths[trimmed] = { ...existing, ...out };
  }
  document.paths = paths;
  // The bearer scheme is declared whenever configureJwt is (swagger needs it to build guarded
  // operations); when no operation uses it, it goes, so the document does not claim an unused scheme.
  // Copies, not deletes: swagger may hand the same objects to a later build.
  const withComponents = document as T & { components?: Components };
  const components = withComponents.components;
  if (
    !bearerUsed &&
    components?.securitySchemes &&
    BEARER_SECURITY_SCHEME in components.securitySchemes
  ) {
    const { [BEARER_SECURITY_SCHEME]: _unused, ...otherSchemes } = components.securitySchemes;
    const { securitySchemes: _all, ...otherComponents } = components;
    withComponents.components =
      Object.keys(otherSchemes).length > 0
        ? { ...otherComponents, securitySchemes: otherSchemes }
        : otherComponents;
  }
  const namedSchemas = named?.components() ?? {};
  if (Object.keys(namedSchemas).length > 0) {
    const current = withComponents.components ?? {};
    withComponents.components = {
      ...current,
      schemas: { ...namedSchemas, ...(current.schemas as Record<string, unknown> | undefined) },
    };
  }
  if (Object.keys(groupSchemes).length > 0) {
    const current = withComponents.components ?? {};
    withComponents.components = {
      ...current,
      securitySchemes: { ...groupSchemes, ...current.securitySchemes },
    };
  }
  // An operation whose guard Kit cannot see carries no `security` of its own (it is not declared
  // public); redocly's recommended rules require one on the operation or the root, so the root
  // states the API-wide default: no requirement declared. A host root `security` wins.
  if (securityUnknown && document.security === undefined) document.security = [];
  if (problemSchemaUsed || problemResponsesUsed)
    withComponents.components = declareProblemComponents(
      withComponents.components ?? {},
      problemResponsesUsed,
    );
  if (!document.servers || document.servers.length === 0) document.servers = [{ url: '/' }];
  document.tags = [...tags.values()];
  return document;
}

/**
 * Installs the OpenAPI 3.1 document (`opt.openApiPath`) and the reference UI (`opt.docsPath`,
 * assets served locally). It must be registered before any route: swagger collects routes as they
 * are added.
 */
export function registerOpenApi(
  app: FastifyInstance,
  options: OpenApiSettings,
  table: OperationIds,
): void {
  const documentPath = options.openApiPath;
  if (documentPath === false) return;
  const pkg = hostPackage();
  // Schemas with an `$id` become named components; collected as routes are added, so a clash fails start-up.
  const named = new NamedSchemas();
  app.addHook('onRoute', (route) => named.collect(route));
  const swaggerOptions: SwaggerOptions = {
    openapi: {
      openapi: '3.1.0',
      ...(options.jwt
        ? {
            components: {
              securitySchemes: { [BEARER_SECURITY_SCHEME]: BEARER_SECURITY_SCHEME_OBJECT },
            },
          }
        : {}),
      info: {
        title: options.openApiInfo.title ?? pkg.name ?? 'API',
        version:
          options.openApiInfo.version ?? options.applicationVersion ?? pkg.version ?? '0.0.0',
        ...(options.openApiInfo.description
          ? { description: options.openApiInfo.description }
          : {}),
      },
    },
    // A schema added with addSchema({ $id: 'Money', ... }) is the component `Money` (swagger's
    // default names them def-0, def-1...); an $id that is not a valid component name keeps def-N.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' && /^[A-Za-z0-9._-]+$/.test(json.$id) ? json.$id : `def-${i}`,
    },
    // Routes whose errors Kit answers (opt.problemDetails) carry a marker to finishDocument, which
    // turns it into the problem responses: only here is the Fastify route still known.
    // Schemes a group declared must be in the document before swagger builds the operation (it
    // looks each required scheme up), so they are added here, route by route.
    transform: (input) => {
      const { url, route } = input;
      const schema = named.rewrite(input.schema);
      const schemes = (
        schema as { [SECURITY_SCHEMES_MARK]?: Record<string, unknown> } | undefined
      )?.[SECURITY_SCHEMES_MARK];
      if (schemes && 'openapiObject' in input) {
        const openapi = input.openapiObject as { components?: Components };
        const components = (openapi.components ??= {});
        components.securitySchemes = { ...schemes, ...components.securitySchemes };
      }
      return answersProblems(route)
        ? { schema: { ...schema, [PROBLEM_MARK]: true }, url }
        : { schema, url };
    },
    transformObject: (documentObject) => {
      if (!('openapiObject' in documentObject)) return documentObject.swaggerObject;
      finishDocument(documentObject.openapiObject as unknown as Document, table, named);
      return documentObject.openapiObject;
    },
  };
  // swagger collects routes in an onRoute hook. Registered as a plugin it would attach that hook
  // only when the plugin queue loads, missing root routes added right after addKit; its setup is
  // synchronous, so calling it here documents every route added from now on.
  fastifySwagger(app, swaggerOptions, (err?: Error) => {
    if (err) throw err;
  });
  app.register(async function kitOpenApiDocument(scope) {
    scope.get(documentPath, { schema: { hide: true } }, () => app.swagger());
  });
  // Called inside a plugin of Kit's rather than registered: registering it checks that
  // '@fastify/swagger' was registered as a plugin, which the direct call above does not do.
  const docsPath = options.docsPath;
  if (docsPath !== false) {
    app.register(async function kitReferenceUi(scope) {
      // The module's types declare the callback form; the function itself is async.
      await (
        fastifySwaggerUi as unknown as (
          instance: FastifyInstance,
          opts: { routePrefix: string },
        ) => Promise<void>
      )(scope, { routePrefix: docsPath });
    });
  }
}
