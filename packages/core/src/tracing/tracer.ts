// Spans for Kit and its plugins, through the OpenTelemetry API's global registry rather than an
// import of `@opentelemetry/api`: every copy of the API (1.x) registers the tracer provider and the
// context manager under one well-known symbol, so reading them there works with whichever copy the
// host's SDK uses, and costs two property reads when OpenTelemetry is absent. A plugin asks for a
// tracer at each operation (the SDK may be registered after the plugin starts); `undefined` means
// no SDK is registered, and the plugin does no tracing work at all.

/**
 * The span kinds Kit uses (OpenTelemetry's `SpanKind` values).
 *
 * @example
 * ```ts
 * tracer.startSpan('SELECT products', KitSpanKind.CLIENT, {});
 * ```
 */
export const KitSpanKind = { INTERNAL: 0, SERVER: 1, CLIENT: 2 } as const;

/**
 * Attribute values as OpenTelemetry accepts them.
 *
 * @example
 * ```ts
 * const attributes: KitSpanAttributes = { 'db.system.name': 'postgresql', 'db.collection.name': 'products' };
 * ```
 */
export type KitSpanAttributes = Record<string, string | number | boolean>;

/**
 * The part of an OpenTelemetry `Span` Kit's plugins use.
 *
 * @example
 * ```ts
 * const span = tracer.startSpan('SELECT products', KitSpanKind.CLIENT, { 'db.collection.name': 'products' });
 * try { await query(); } catch (err) { span.setStatus({ code: 2 }); throw err; } finally { span.end(); }
 * ```
 */
export interface KitSpan {
  setAttribute(key: string, value: string | number | boolean): unknown;
  /** `code`: 0 unset, 1 ok, 2 error (OpenTelemetry's `SpanStatusCode`). */
  setStatus(status: { code: number; message?: string }): unknown;
  end(): void;
}

/**
 * A tracer of the host's OpenTelemetry SDK, as Kit's plugins use it.
 *
 * @example
 * ```ts
 * const tracer = getKitTracer('@kit/autocrud');
 * if (tracer) {
 *   const span = tracer.startSpan('INSERT products', KitSpanKind.CLIENT, { 'db.operation.name': 'INSERT' });
 *   await tracer.withSpan(span, () => insert()).finally(() => span.end());
 * }
 * ```
 */
export interface KitTracer {
  /** Starts a span, child of the active one. */
  startSpan(name: string, kind: number, attributes: KitSpanAttributes): KitSpan;
  /** Runs `fn` with `span` active, so that spans started inside it are its children. */
  withSpan<T>(span: KitSpan, fn: () => T): T;
}

interface OtelContext {
  setValue(key: symbol, value: unknown): OtelContext;
}
interface ContextManager {
  active(): OtelContext;
  with<T>(context: OtelContext, fn: () => T): T;
}
interface Tracer {
  startSpan(
    name: string,
    options: { kind: number; attributes: KitSpanAttributes },
    context: OtelContext,
  ): KitSpan;
}
interface TracerProvider {
  getTracer(name: string, version?: string): Tracer;
}
interface OtelGlobal {
  trace?: TracerProvider;
  context?: ContextManager;
}

// `@opentelemetry/api` 1.x keeps its globals under this symbol and builds context keys with
// `Symbol.for(description)`: these are the API's own keys.
const OTEL_API = Symbol.for('opentelemetry.js.api.1');
const SPAN_KEY = Symbol.for('OpenTelemetry Context Key SPAN');

// Per provider and name; an entry is rebuilt when the host replaces its context manager.
const tracers = new WeakMap<
  TracerProvider,
  Map<string, { manager: ContextManager; tracer: KitTracer }>
>();

/**
 * The tracer named `name` of the OpenTelemetry SDK the host registered, or `undefined` when none
 * is (no tracing work then). Call it at each operation rather than once: the host may register
 * its SDK after the plugin starts.
 *
 * @example
 * ```ts
 * import { getKitTracer, KitSpanKind } from '@kit/core';
 * const tracer = getKitTracer('my-plugin', '1.0.0');
 * const span = tracer?.startSpan('work', KitSpanKind.INTERNAL, {});
 * span?.end();
 * ```
 */
export function getKitTracer(name: string, version?: string): KitTracer | undefined {
  const registry = (globalThis as unknown as Record<symbol, OtelGlobal | undefined>)[OTEL_API];
  const provider = registry?.trace;
  const manager = registry?.context;
  if (provider === undefined || manager === undefined) return undefined;
  let byName = tracers.get(provider);
  if (byName === undefined) tracers.set(provider, (byName = new Map()));
  const key = version === undefined ? name : `${name}@${version}`;
  const cached = byName.get(key);
  if (cached !== undefined && cached.manager === manager) return cached.tracer;
  const otel = provider.getTracer(name, version);
  const tracer: KitTracer = {
    startSpan: (spanName, kind, attributes) =>
      otel.startSpan(spanName, { kind, attributes }, manager.active()),
    withSpan: (span, fn) => manager.with(manager.active().setValue(SPAN_KEY, span), fn),
  };
  byName.set(key, { manager, tracer });
  return tracer;
}
