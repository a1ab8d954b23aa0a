// W3C trace context for audit entries: the ids of the OpenTelemetry span active when the request
// reaches Kit, or else the trace id of an incoming `traceparent` header.
//
// OpenTelemetry is read through the global registry of `@opentelemetry/api` rather than imported:
// every copy of the API (1.x) registers the context manager under one well-known symbol, so that
// several copies in one process share it. Reading it there means Kit has no dependency on the API
// (not even an optional one), works with whichever 1.x copy the host's SDK uses, and costs one
// property read per request when OpenTelemetry is absent.

/** The ids an entry carries. */
export interface TraceIds {
  readonly traceId: string;
  readonly spanId: string | undefined;
}

interface SpanContext {
  traceId?: unknown;
  spanId?: unknown;
}
interface Span {
  spanContext?: () => SpanContext;
}
interface OtelContext {
  getValue?: (key: symbol) => unknown;
}
interface OtelGlobal {
  context?: { active?: () => OtelContext };
}

// `@opentelemetry/api` keeps its globals under `Symbol.for('opentelemetry.js.api.<major>')`, and
// builds context keys with `Symbol.for(description)`, so these are the API's own keys.
const OTEL_API = Symbol.for('opentelemetry.js.api.1');
const SPAN_KEY = Symbol.for('OpenTelemetry Context Key SPAN');
const INVALID_TRACE_ID = '00000000000000000000000000000000';
const INVALID_SPAN_ID = '0000000000000000';
const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;

type Registry = Record<symbol, OtelGlobal | undefined>;

/**
 * The trace and span ids of the span OpenTelemetry holds active now, or `undefined` when there is
 * none (no SDK registered, no span, or an invalid one such as the API's no-op span).
 */
export function activeSpanIds(): TraceIds | undefined {
  const manager = (globalThis as unknown as Registry)[OTEL_API]?.context;
  if (manager === undefined) return undefined;
  let ctx: SpanContext | undefined;
  try {
    const span = manager.active?.().getValue?.(SPAN_KEY) as Span | undefined;
    ctx = span?.spanContext?.();
  } catch {
    return undefined; // a broken context manager must not fail the request
  }
  return validIds(ctx);
}

/**
 * The W3C trace id of the span OpenTelemetry holds active now, or `undefined` (no SDK, no span):
 * for a plugin that records which trace a piece of work belonged to.
 *
 * @example
 * ```ts
 * const traceId = activeTraceId();   // '4bf92f3577b34da6a3ce929d0e0e4736' under a traced request
 * ```
 */
export function activeTraceId(): string | undefined {
  return activeSpanIds()?.traceId;
}

function validIds(ctx: SpanContext | undefined): TraceIds | undefined {
  const traceId = ctx?.traceId;
  const spanId = ctx?.spanId;
  if (typeof traceId !== 'string' || typeof spanId !== 'string') return undefined;
  if (
    traceId === INVALID_TRACE_ID ||
    spanId === INVALID_SPAN_ID ||
    !TRACE_ID.test(traceId) ||
    !SPAN_ID.test(spanId)
  )
    return undefined;
  return { traceId, spanId };
}

/** True when some copy of the OpenTelemetry API has registered its globals (an SDK may be active). */
export function otelRegistered(): boolean {
  return (globalThis as unknown as Registry)[OTEL_API] !== undefined;
}

interface FastifyOtelRequest {
  opentelemetry?: () => { context?: OtelContext | null } | undefined;
}

/**
 * The ids of `@fastify/otel`'s request span (`request.opentelemetry().context`, documented by the
 * plugin), or `undefined` without the plugin. Read when the response is done: the plugin's hooks
 * may run after Kit's, and while they run the active span is a hook's own span, not the request's.
 * The context stays on the request after the span ends.
 */
export function fastifyOtelSpanIds(request: object): TraceIds | undefined {
  const read = (request as FastifyOtelRequest).opentelemetry;
  if (typeof read !== 'function') return undefined;
  try {
    const span = read.call(request)?.context?.getValue?.(SPAN_KEY) as Span | undefined;
    return validIds(span?.spanContext?.());
  } catch {
    return undefined;
  }
}

// version "-" trace-id "-" parent-id "-" flags, lower-case hex (W3C Trace Context, level 1).
// A later version may append fields after the flags, separated by "-".
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-.*)?$/;

/**
 * The trace id of a W3C `traceparent` header, or `undefined` when the header is absent or invalid
 * (version `ff`, an all-zero trace or parent id, upper-case hex, version 00 with extra fields,
 * a repeated header).
 */
export function traceIdFromTraceparent(header: unknown): string | undefined {
  if (typeof header !== 'string' || header.length > 512) return undefined;
  const m = TRACEPARENT.exec(header);
  if (m === null) return undefined;
  const [, version, traceId, parentId, rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (traceId === INVALID_TRACE_ID || parentId === INVALID_SPAN_ID) return undefined;
  return traceId;
}
