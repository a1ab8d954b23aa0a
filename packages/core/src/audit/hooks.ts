import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { LifecyclePhases } from '../lifecycle/phases.js';
import type { KitServices } from '../shared/services.js';
import { correlationIdFrom, enterCorrelationContext } from './correlation.js';
import { createExcludeMatcher } from './exclude.js';
import { HeaderNames } from './header-json.js';
import type { AuditTrailOptions } from './options.js';
import { AuditRecord, type RecordSettings } from './record.js';
import { kRecord } from './record-slot.js';
import { Redactor } from './redaction.js';
import { newUuid } from './uuid.js';
import { kCorrelationId } from './request-correlation.js';
import { installRequestLogging } from './request-logging.js';
import { activeSpanIds, fastifyOtelSpanIds, otelRegistered } from './trace.js';
import { AuditTrail, type AuditSinkFactory } from './trail.js';

export { AuditTrail } from './trail.js';

// Per-request state rides on Node's own request and response objects under symbols: no Fastify
// decoration (which would widen every FastifyRequest) and no closure per request. (kCorrelationId
// lives in request-correlation.ts, which reads it for Kit's stored ids when the trail is off too.)
// (kRecord lives in record-slot.ts, which setAuditDetail shares without pulling the record's class
// into the public declarations.)
// The Fastify request, kept only while OpenTelemetry is registered (see fastifyOtelSpanIds).
const kOtelRequest = Symbol('kit.audit.otelRequest');

/** `string`: audited with this id; `null`: excluded path; absent: Kit's genReqId did not run. */
type RawRequest = IncomingMessage & { [kCorrelationId]?: string | null };
type RawResponse = ServerResponse & {
  [kRecord]?: AuditRecord | undefined;
  [kOtelRequest]?: FastifyRequest | undefined;
};
type GenReqId = (this: unknown, req: IncomingMessage) => string;

/**
 * Wires the audit trail into a Fastify instance (called by `addKit`, before any plugin context or
 * route exists):
 *
 * - `genReqId` gives audited requests their correlation id as `request.id`, so every log line of
 *   the request carries it. Excluded paths keep the id generator the instance had before (the
 *   host's `genReqId` option, `requestIdHeader`, or Fastify's counter). A host that calls
 *   `setGenReqId` after `addKit` wins for `request.id`; the correlation id is then computed in
 *   the first hook and used for the header, the entry and `getCorrelationId()` all the same.
 *   Fastify's `requestIdHeader` option is applied by Fastify around any genReqId: when a request
 *   carries that header, its value is `request.id`, and the correlation id again comes from the
 *   first hook.
 * - A root `onRequest` hook sets the response header, opens the correlation context and starts
 *   the record; the response's `close` event (which fires for completed and for aborted
 *   responses alike) finishes it. No body is read and nothing waits on the sink.
 * - Fastify's log controller is wrapped (`request-logging.ts`): its per-request lines are left
 *   out unless `fastifyRequestLogging`, and no line it writes shows a redacted value.
 * - A `flush` phase step writes the queue when the app closes, after in-flight requests and
 *   before the `release` steps (a database an audit sink may write to); SIGTERM/SIGINT that
 *   nothing else handles flush it too (lifecycle/signals.ts).
 */
export function installAuditTrail(
  app: FastifyInstance,
  options: Readonly<AuditTrailOptions>,
  factory: AuditSinkFactory | undefined,
  services: KitServices,
  phases: LifecyclePhases,
): AuditTrail {
  const trail = new AuditTrail(app, options, factory, services);
  const isExcluded = createExcludeMatcher(options.excludePaths);
  const redactor = new Redactor(options.redactHeaders, options.redactQueryParams);
  const settings: RecordSettings = {
    redactor,
    headerNames: new HeaderNames(redactor),
    includeQuery: options.includeQueryString,
  };
  const headerKey = options.correlationIdHeader.toLowerCase();
  const forward = options.forwardCorrelationId;
  const withContext = options.correlationIdContext;
  installRequestLogging(app, settings, options.fastifyRequestLogging);

  function correlationIdOf(raw: RawRequest): string | null {
    if (isExcluded(raw.url ?? '/')) return null;
    return forward ? correlationIdFrom(raw.headers[headerKey]) : newUuid();
  }

  const previous = (app as unknown as { genReqId?: GenReqId }).genReqId;
  let fallbackCounter = 0;
  const hostGenReqId: GenReqId =
    typeof previous === 'function' ? previous : () => `req-${(++fallbackCounter).toString(36)}`;
  app.setGenReqId(function kitGenReqId(this: unknown, req: RawRequest): string {
    const id = correlationIdOf(req);
    req[kCorrelationId] = id;
    return id ?? hostGenReqId.call(this, req);
  });

  function onResponseClose(this: RawResponse): void {
    const record = this[kRecord];
    if (record === undefined) return;
    this[kRecord] = undefined;
    const otelRequest = this[kOtelRequest];
    if (otelRequest !== undefined) {
      this[kOtelRequest] = undefined;
      const ids = fastifyOtelSpanIds(otelRequest);
      if (ids !== undefined) record.setTrace(ids);
    }
    // 'close' before end() was called: the connection went away before the response was
    // complete. (writableFinished would also wait for the bytes to drain, which inject's fake
    // socket never reports.)
    const aborted = !this.writableEnded;
    record.complete(
      aborted && !this.headersSent ? 499 : this.statusCode,
      performance.now(),
      aborted,
    );
    trail.accept(record);
  }

  app.addHook(
    'onRequest',
    function kitAuditOnRequest(
      request: FastifyRequest,
      reply: FastifyReply,
      done: HookHandlerDoneFunction,
    ): void {
      const raw = request.raw as RawRequest;
      let id = raw[kCorrelationId];
      if (id === undefined) {
        id = correlationIdOf(raw);
        raw[kCorrelationId] = id;
      }
      if (id === null) {
        // The connection's async resource may still carry the previous request's id.
        if (withContext) enterCorrelationContext(undefined);
        done();
        return;
      }
      // reply.header(), not res.setHeader(): a header set on Node's response pushes every later
      // writeHead() onto Node's slow path. Error replies and 404s keep it; a handler that hijacks
      // the reply writes its own headers. Fastify lower-cases names anyway: hand it the lower-case one.
      reply.header(headerKey, id);
      const res = reply.raw as RawResponse;
      if (withContext) enterCorrelationContext(id);
      if (res[kRecord] === undefined) res.on('close', onResponseClose);
      const record = new AuditRecord(
        raw.method ?? 'GET',
        raw.url ?? '/',
        raw.headers,
        id,
        performance.now(),
        settings,
        request.routeOptions.config,
        request,
      );
      // With the OpenTelemetry SDK registered, the span of this request (an HTTP server span) is active
      // here; @fastify/otel's request span, when there is one, replaces it when the response is done.
      if (otelRegistered()) {
        const span = activeSpanIds();
        if (span !== undefined) record.setTrace(span);
        res[kOtelRequest] = request;
      }
      res[kRecord] = record;
      done();
    },
  );

  phases.add('flush', {
    name: 'audit trail',
    run: () => trail.close(),
    abandon: (boundMs) => trail.abandonCloseFlush(boundMs),
  });
  return trail;
}
