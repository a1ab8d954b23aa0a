import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import type { RouteTable } from '../endpoints/operation-ids.js';
import { hostPackage } from '../host-package.js';
import type { ResolvedKitOptions } from '../options.js';

type Operation = { operationId?: string; tags?: string[]; summary?: string; security?: unknown[] };
type Document = {
  paths?: Record<string, Record<string, unknown>>;
  tags?: Array<{ name: string } & Record<string, unknown>>;
  servers?: unknown[];
  security?: unknown[];
};

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/**
 * Gives each method of a multi-method route its own operationId, drops the trailing `/` Fastify
 * leaves on a group root (`'/'` is registered as both `/api/user` and `/api/user/`), and lists
 * every tag in use at the top level, keeping descriptions the host supplied. What the host left
 * out and `redocly lint` requires gets a plain default: a summary `GET /path`, `security: []`
 * (public) on operations that declare none, and a relative server `/`.
 */
export function finishDocument<T extends Document>(document: T, table: RouteTable): T {
  const tags = new Map<string, { name: string } & Record<string, unknown>>();
  for (const tag of document.tags ?? []) tags.set(tag.name, tag);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [url, item] of Object.entries(document.paths ?? {})) {
    const trimmed = url.length > 1 && url.endsWith('/') && !document.paths?.[url.slice(0, -1)] ? url.slice(0, -1) : url;
    const out: Record<string, unknown> = {};
    for (const [method, value] of Object.entries(item)) {
      if (!METHODS.has(method) || typeof value !== 'object' || value === null) {
        out[method] = value;
        continue;
      }
      // swagger shares one operation object between the methods of a route: copy before renaming.
      const op = { ...(value as Operation) };
      if (op.operationId) op.operationId = table.operationIdOf(op.operationId, method.toUpperCase());
      op.summary ??= `${method.toUpperCase()} ${trimmed}`;
      if (op.security === undefined && document.security === undefined) op.security = [];
      for (const tag of op.tags ?? []) if (!tags.has(tag)) tags.set(tag, { name: tag });
      out[method] = op;
    }
    paths[trimmed] = out;
  }
  document.paths = paths;
  if (!document.servers || document.servers.length === 0) document.servers = [{ url: '/' }];
  document.tags = [...tags.values()];
  return document;
}

/**
 * Registers the OpenAPI 3.1 document (`opt.openApiPath`) and the reference UI (`opt.docsPath`,
 * assets served locally). It must be registered before any route: swagger collects routes as they
 * are added.
 */
export function registerOpenApi(app: FastifyInstance, options: ResolvedKitOptions, table: RouteTable): void {
  const documentPath = options.openApiPath;
  if (documentPath === false) return;
  const pkg = hostPackage();
  app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: options.openApiInfo.title ?? pkg.name ?? 'API',
        version: options.openApiInfo.version ?? options.applicationVersion ?? pkg.version ?? '0.0.0',
        ...(options.openApiInfo.description ? { description: options.openApiInfo.description } : {}),
      },
    },
    transformObject: (documentObject) =>
      'openapiObject' in documentObject
        ? (finishDocument(documentObject.openapiObject as Document, table) as typeof documentObject.openapiObject)
        : documentObject.swaggerObject,
  });
  app.register(async function kitOpenApiDocument(scope) {
    scope.get(documentPath, { schema: { hide: true } }, () => app.swagger());
  });
  if (options.docsPath !== false) app.register(swaggerUi, { routePrefix: options.docsPath });
}
