// Every read Kit makes of Fastify's and pino's private state, in one place.
//
// Fastify and pino keep their state under `Symbol('fastify.…')` and `Symbol('pino.…')` keys (one
// set per installed copy, so they are found by description), and a minor release may rename or
// reshape any of them. Each reader below checks the shape it finds and returns `undefined` when it
// is not the expected one; its caller then takes the public path named at the reader, which does
// the same job more slowly or with less. No reader throws.
//
// `internals.test.ts` fails when any read falls back on the Fastify and pino a test run uses, and
// `.ci/run` runs it (with the audit and JWT suites) against the oldest and newest Fastify 5 and
// pino the peer ranges admit. A reader is kept only where no public API does the job or the
// measured saving pays for the second path: the measurements are in docs/decisions.md.
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** The symbol of `target` (or of its prototype chain) whose description is `description`. */
function symbolOf(target: object, description: string): symbol | undefined {
  for (
    let o: object | null = target;
    o !== null && o !== Object.prototype;
    o = Object.getPrototypeOf(o) as object | null
  ) {
    for (const s of Object.getOwnPropertySymbols(o)) if (s.description === description) return s;
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string | symbol, unknown> {
  return typeof value === 'object' && value !== null;
}

// ---------------------------------------------------------------------------------------------
// Fastify

/** Fastify's `LogController` as Kit reads it: the methods that write a request's lines. */
export type FastifyLogController = Record<string, unknown>;

/** Where an instance keeps its log controller, and a way to put a wrapped one in its place. */
interface LogControllerSlot {
  readonly controller: FastifyLogController;
  replace(controller: FastifyLogController): void;
}

/**
 * The instance's log controller (`Symbol('fastify.logController')`, Fastify 5.10 and later), which
 * writes `incoming request`, `request completed` and `Route … not found`. Fastify takes it only as
 * the `logController` option of `Fastify()` and has no public way to read or change it afterwards.
 *
 * Fallback (`undefined`, always so before Fastify 5.10): the audit trail cannot keep those lines
 * from logging the raw URL, and says so at start-up (`audit/request-logging.ts`).
 */
export function fastifyLogController(app: FastifyInstance): LogControllerSlot | undefined {
  const symbol = symbolOf(app, 'fastify.logController');
  if (symbol === undefined) return undefined;
  const host = app as unknown as Record<symbol, unknown>;
  const controller = host[symbol];
  if (
    !isObject(controller) ||
    typeof controller.incomingRequest !== 'function' ||
    typeof controller.requestCompleted !== 'function'
  )
    return undefined;
  return {
    controller,
    replace(next) {
      host[symbol] = next;
    },
  };
}

/** The hooks an encapsulation context added with `addHook`, by hook name. */
export type ContextHooksReader = (
  instance: FastifyInstance,
  hookName: string,
) => readonly unknown[] | undefined;

/**
 * A reader of each context's own hooks (`Symbol('fastify.hooks')`: the functions as passed to
 * `addHook`, before Fastify binds them into a route at `ready`). Fastify has no public way to see
 * a context-wide `addHook('onRequest', app.kitAuthenticate)`: `onRoute` runs before such a hook is
 * added, and the route's merged hooks are private and bound (no longer the same function).
 *
 * Fallback (`undefined`): routes guarded by a context-wide hook are documented as public in the
 * OpenAPI document (route-level hooks are still seen), and start-up says so (`auth/authenticate.ts`).
 */
export function fastifyContextHooks(app: FastifyInstance): ContextHooksReader | undefined {
  const symbol = symbolOf(app, 'fastify.hooks');
  if (symbol === undefined) return undefined;
  const own = (app as unknown as Record<symbol, unknown>)[symbol];
  if (!isObject(own) || !Array.isArray(own.onRequest) || !Array.isArray(own.preHandler))
    return undefined;
  return (instance, hookName) => {
    const hooks = (instance as unknown as Record<symbol, unknown>)[symbol];
    const list = isObject(hooks) ? hooks[hookName] : undefined;
    return Array.isArray(list) ? list : undefined;
  };
}

/** Fastify's per-route context as Kit reads it: the route's config (its `url` is the pattern). */
interface FastifyRouteContext {
  readonly config: { readonly url?: unknown };
}

/** Reads the route context a request carries, or `undefined` when it is not there or not the expected shape. */
type RouteContextReader = (request: FastifyRequest) => FastifyRouteContext | undefined;

/**
 * A reader of the route context each request carries (`Symbol('fastify.context')`): one object per
 * route, and one for every request no route matched, so it can key a per-route cache, and it holds
 * the route's config. The public `request.routeOptions` builds a new object at each read, so it can
 * key nothing. The symbol is looked up on the first request the reader sees and kept.
 *
 * Fallback (`undefined`): the caller builds the context from `request.routeOptions.config`, a new
 * object per request, so a per-route cache misses every time (`metrics/requests.ts`).
 *
 * @example
 * ```ts
 * const routeContext = fastifyRouteContext();
 * app.addHook('onResponse', async (request) => {
 *   const context = routeContext(request) ?? { config: request.routeOptions.config };
 * });
 * ```
 */
export function fastifyRouteContext(): RouteContextReader {
  let symbol: symbol | null | undefined;
  return (request) => {
    if (symbol === undefined) symbol = symbolOf(request, 'fastify.context') ?? null;
    if (symbol === null) return undefined;
    const context = (request as unknown as Record<symbol, unknown>)[symbol];
    return isObject(context) && isObject(context.config)
      ? (context as unknown as FastifyRouteContext)
      : undefined;
  };
}

// ---------------------------------------------------------------------------------------------
// pino

/** A pino destination as Kit writes to it. */
export interface PinoDestination {
  write(chunk: string): unknown;
}

/** pino's private symbols the direct audit lines read (`Symbol('pino.…')`, one set per copy of pino). */
const PINO_PRIVATE = [
  'pino.lsCache',
  'pino.time',
  'pino.chindings',
  'pino.end',
  'pino.stream',
  'pino.messageKey',
  'pino.msgPrefix',
  'pino.mixin',
  'pino.nestedKey',
  'pino.stringifiers',
] as const;
type PinoPrivate = (typeof PINO_PRIVATE)[number];

/**
 * What makes a line a given pino logger's, read through pino's own symbols. The settings that can
 * change while the logger lives (its bindings, its destination) are read on every call; the ones
 * fixed when the logger was made are read once.
 */
export interface PinoLoggerState {
  /** `{"level":30` (or the logger's level formatter's output) for each level value. */
  levelHead(value: number): string | undefined;
  /** The logger's time function's output: `,"time":1700000000000`, or `''`. */
  time(): string;
  /** The bindings as JSON members: `,"pid":1,"hostname":"h"`. */
  chindings(): string;
  /** What closes a line: `}` and the line end. */
  readonly end: string;
  readonly messageKey: string;
  /** The child logger's `msgPrefix`, or `undefined`. */
  msgPrefix(): string | undefined;
  destination(): PinoDestination | undefined;
  // The configuration that can make pino's line differ from one built from the parts above.
  readonly mixin: unknown;
  readonly nestedKey: unknown;
  /** Stringifiers by key; redaction installs them (a symbol key for wildcard paths). */
  readonly stringifiers: Readonly<Record<string | symbol, unknown>>;
  /** The public `Symbol.for('pino.*')` settings. */
  readonly serializers: Readonly<Record<string, unknown>>;
  readonly formatters: Readonly<Record<string, unknown>>;
  readonly hooks: Readonly<Record<string, unknown>>;
}

/**
 * The state of a pino logger that its audit lines are built from (`audit/pino-lines.ts`). pino
 * exports these symbols as `pino.symbols` "for integration purposes", but per copy of pino: Kit,
 * which does not depend on pino, finds the logger's own by description.
 *
 * Fallback (`undefined`: not pino, or a pino whose state is not the expected one): the audit trail
 * writes each entry through `logger[level](fields, message)`, which writes the same line, one
 * destination write per entry.
 */
export function pinoLoggerState(logger: object): PinoLoggerState | undefined {
  const l = logger as Record<symbol, unknown>;
  const sym = {} as Record<PinoPrivate, symbol>;
  for (const name of PINO_PRIVATE) {
    const s = symbolOf(logger, name);
    if (s === undefined) return undefined;
    sym[name] = s;
  }
  const lsCache = l[sym['pino.lsCache']];
  const time = l[sym['pino.time']];
  const end = l[sym['pino.end']];
  const messageKey = l[sym['pino.messageKey']];
  const stringifiers = l[sym['pino.stringifiers']];
  const serializers = l[Symbol.for('pino.serializers')];
  if (
    !isObject(lsCache) ||
    typeof time !== 'function' ||
    typeof l[sym['pino.chindings']] !== 'string'
  )
    return undefined;
  if (
    typeof end !== 'string' ||
    typeof messageKey !== 'string' ||
    !isObject(stringifiers) ||
    !isObject(serializers)
  )
    return undefined;
  const formatters = l[Symbol.for('pino.formatters')];
  const hooks = l[Symbol.for('pino.hooks')];
  return {
    levelHead: (value) => {
      // Rebuilt when the logger's levels change: read it each time.
      const head = (l[sym['pino.lsCache']] as Record<number, unknown> | undefined)?.[value];
      return typeof head === 'string' ? head : undefined;
    },
    time: time.bind(logger) as () => string,
    chindings: () => l[sym['pino.chindings']] as string,
    end,
    messageKey,
    msgPrefix: () => {
      const prefix = l[sym['pino.msgPrefix']];
      return typeof prefix === 'string' ? prefix : undefined;
    },
    destination: () => {
      const stream = l[sym['pino.stream']];
      return isObject(stream) && typeof stream.write === 'function'
        ? (stream as unknown as PinoDestination)
        : undefined;
    },
    mixin: l[sym['pino.mixin']],
    nestedKey: l[sym['pino.nestedKey']],
    stringifiers,
    serializers,
    formatters: isObject(formatters) ? formatters : {},
    hooks: isObject(hooks) ? hooks : {},
  };
}

/**
 * The destination a pino logger writes to (`Symbol('pino.stream')`). pino has no public getter.
 *
 * Fallback (`undefined`): the flush before the process ends cannot write out what the destination
 * still buffers beyond what `logger.flush()` does (`lifecycle/log-flush.ts`).
 */
export function pinoDestinationOf(logger: object): unknown {
  const symbol = symbolOf(logger, 'pino.stream');
  return symbol === undefined ? undefined : (logger as Record<symbol, unknown>)[symbol];
}

/**
 * Whether a sonic-boom destination (pino's own) has a write running in libuv's pool, its
 * `_writing` flag. sonic-boom says so only through this field.
 *
 * Fallback (`undefined`: not a boolean): the flush before the process ends writes what is buffered
 * at once instead of waiting for that write's `drain` first (`lifecycle/log-flush.ts`).
 */
export function sonicBoomWriting(stream: unknown): boolean | undefined {
  const writing = isObject(stream) ? stream._writing : undefined;
  return typeof writing === 'boolean' ? writing : undefined;
}
