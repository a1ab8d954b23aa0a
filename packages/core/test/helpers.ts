import type { FastifyInstance } from 'fastify';

// The endpoint tests' apps: Kit added with their endpoint sources, booted for inject().
export { kitApp } from '@kit/test-support/kit-app';

/** The OpenAPI document of an app, as JSON. */
export async function openApiOf(app: FastifyInstance): Promise<OpenApiDocument> {
  const res = await app.inject('/openapi.json');
  if (res.statusCode !== 200) throw new Error(`/openapi.json answered ${res.statusCode}`);
  return res.json<OpenApiDocument>();
}

export interface OpenApiOperation {
  operationId?: string;
  tags?: string[];
  summary?: string;
  security?: unknown[];
}

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, OpenApiOperation>>;
  tags: Array<{ name: string; description?: string }>;
}

/** `{ 'GET /api/user/profile': operation }` for every operation of the document. */
export function operations(doc: OpenApiDocument): Record<string, OpenApiOperation> {
  const out: Record<string, OpenApiOperation> = {};
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) out[`${method.toUpperCase()} ${path}`] = op;
  }
  return out;
}

/** A route-adding class for tests: `routes` is [method, path] pairs answering `{ route }`. */
export function endpoint(
  name: string,
  routes: Array<[string, string]>,
  extra?: (app: FastifyInstance) => void,
) {
  const cls = class {
    addRoutes(app: FastifyInstance) {
      extra?.(app);
      for (const [method, path] of routes) {
        app.route({
          method,
          url: path,
          handler: async (req) => ({ route: `${name} ${method} ${path}`, params: req.params }),
        });
      }
    }
  };
  Object.defineProperty(cls, 'name', { value: name });
  return cls;
}
