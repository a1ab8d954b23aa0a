import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { KitError, show } from '../shared/errors.js';
import { readEndpointMetadata, type EndpointMetadata } from './metadata.js';
import type { EndpointClass } from './types.js';

/** An endpoint class found in the sources, with what its decorators recorded (read once, here). */
export interface DiscoveredClass {
  readonly cls: EndpointClass;
  readonly meta: EndpointMetadata;
}

/**
 * Where endpoint classes come from: a directory (path string, relative to the working directory,
 * or a file URL) scanned recursively, an endpoint class, or a module namespace object.
 *
 * @example
 * ```ts
 * import * as admin from './admin/index.js';
 * addKit(app, [new URL('./endpoints/', import.meta.url), 'plugins/endpoints', admin, HealthzEndpoint]);
 * ```
 */
export type EndpointSource = string | URL | EndpointClass | Readonly<Record<string, unknown>>;

const JS = new Set(['.js', '.mjs', '.cjs']);
const TS = new Set(['.ts', '.mts', '.cts']);

/** True when a TypeScript loader (tsx, ts-node, Node's type stripping) can import `.ts` files here. */
function typeScriptLoaderActive(): boolean {
  if ((process.features as { typescript?: unknown }).typescript) return true;
  const flags = `${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`;
  return /tsx|ts-node|@swc-node|esbuild-register|--experimental-strip-types|--experimental-transform-types/.test(
    flags,
  );
}

/**
 * `value` with its metadata when it is an endpoint class: an exported class with an `addRoutes`
 * method, one decorated `@KitEndpoint()`, or one with a route contributor.
 */
function endpointOf(value: unknown): DiscoveredClass | undefined {
  if (
    typeof value !== 'function' ||
    typeof value.prototype !== 'object' ||
    value.prototype === null
  )
    return undefined;
  const cls = value as EndpointClass;
  const meta = readEndpointMetadata(cls);
  const hasRoutes = typeof (value.prototype as { addRoutes?: unknown }).addRoutes === 'function';
  return hasRoutes || meta.legacy || meta.contributors.length > 0 ? { cls, meta } : undefined;
}

function isModuleFile(name: string, withTs: boolean): boolean {
  if (/\.(test|spec)\.[cm]?[jt]s$/.test(name) || /\.d\.[cm]?ts$/.test(name)) return false;
  const ext = path.extname(name);
  return JS.has(ext) || (withTs && TS.has(ext));
}

/**
 * A `.ts` source beside its compiled `.js` is the same module twice: Node 24 strips types itself,
 * so both would load and every route would be declared twice. The compiled one wins.
 */
function hasCompiledSibling(name: string, names: ReadonlySet<string>): boolean {
  const ext = path.extname(name);
  if (!TS.has(ext)) return false;
  const base = name.slice(0, -ext.length);
  return [...JS].some((js) => names.has(base + js));
}

async function listModules(dir: string, withTs: boolean): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const names = new Set(entries.map((e) => e.name));
  const files: string[] = [];
  for (const entry of entries) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await listModules(full, withTs)));
    else if (
      entry.isFile() &&
      isModuleFile(entry.name, withTs) &&
      !hasCompiledSibling(entry.name, names)
    )
      files.push(full);
  }
  return files;
}

/** Found classes, each once, in the order first found. */
type Found = Map<EndpointClass, DiscoveredClass>;

function add(found: Found, value: unknown): boolean {
  if (found.has(value as EndpointClass)) return true;
  const endpoint = endpointOf(value);
  if (endpoint) found.set(endpoint.cls, endpoint);
  return endpoint !== undefined;
}

function collect(namespace: Readonly<Record<string, unknown>>, into: Found): void {
  for (const value of Object.values(namespace)) add(into, value);
}

async function scanDirectory(dir: string, into: Found, origin: string): Promise<void> {
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory()) {
    throw new KitError(
      'KIT_ERR_ENDPOINT_SOURCE',
      `Endpoint source ${origin} is not a directory (resolved to ${dir}). Pass an existing directory, an endpoint class or a module namespace.`,
    );
  }
  for (const file of await listModules(dir, typeScriptLoaderActive())) {
    let namespace: Record<string, unknown>;
    try {
      namespace = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    } catch (err) {
      throw new KitError(
        'KIT_ERR_ENDPOINT_SOURCE',
        `Could not import endpoint module ${file}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    collect(namespace, into);
  }
}

/** The default source: the `endpoints/` folder beside the entry module, when it exists. */
function defaultEndpointsDirectory(): string | undefined {
  const entry = process.argv[1];
  return entry ? path.join(path.dirname(path.resolve(entry)), 'endpoints') : undefined;
}

/** Loads every endpoint class named by `sources`, in a stable order, each class once, with its metadata. */
export async function discoverEndpointClasses(
  sources: readonly EndpointSource[] | undefined,
): Promise<DiscoveredClass[]> {
  const found: Found = new Map();
  if (sources === undefined) {
    const dir = defaultEndpointsDirectory();
    if (dir && (await stat(dir).catch(() => undefined))?.isDirectory())
      await scanDirectory(dir, found, JSON.stringify(dir));
    return [...found.values()];
  }
  for (const source of sources) {
    if (typeof source === 'string')
      await scanDirectory(path.resolve(source), found, JSON.stringify(source));
    else if (source instanceof URL) {
      if (source.protocol !== 'file:')
        throw new KitError(
          'KIT_ERR_ENDPOINT_SOURCE',
          `Endpoint source ${source.href} is not a file: URL.`,
        );
      await scanDirectory(fileURLToPath(source), found, source.href);
    } else if (typeof source === 'function') {
      if (!add(found, source)) {
        throw new KitError(
          'KIT_ERR_ENDPOINT_SOURCE',
          `Endpoint source ${show(source)} is not an endpoint class: implement IKitEndpoint (an addRoutes(app) method), decorate it @KitEndpoint(), or give it a route contributor (@KitRouteContributor).`,
        );
      }
    } else if (typeof source === 'object' && source !== null) collect(source, found);
    else
      throw new KitError(
        'KIT_ERR_ENDPOINT_SOURCE',
        `Endpoint source ${show(source)} is not a directory, URL, class or module namespace.`,
      );
  }
  return [...found.values()];
}
