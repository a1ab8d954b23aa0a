// Fastify's own per-request log lines, made to fit the audit trail.
//
// Fastify logs `incoming request` with `req.url`, the raw URL: `GET /x?token=SECRET` was redacted
// in the audit entry and written in clear one line above it. Its error lines carry `req` too, and
// `Route GET:/x?token=SECRET not found` puts the URL in the message. Since Fastify 5.10 every one
// of these lines goes through the instance's `LogController`, so Kit wraps that controller (the
// host's own, if it passed one) at `addKit`:
//
// - `incoming request`, `request completed` and `Route ... not found` are left out while
//   `fastifyRequestLogging` is false (the default): the audit entry is the request's line.
//   `request errored` (a response stream that failed) stays: it carries the error.
// - Every line that is still written sees the request through a view whose URL and headers are
//   redacted like the entry's, so no listed parameter or header reaches the log, whatever
//   serializer formats `req`.
//
// This works after Fastify() was constructed and sets no deprecated option (`disableRequestLogging`
// at the top level warns FSTDEP023 on Fastify >= 5.10). Fastify takes a controller only as an
// option of `Fastify()`, so Kit reaches the instance's through `internals/`. Fastify before 5.10
// has no controller: Kit then cannot change those lines and says so at start-up.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { fastifyLogController, type FastifyLogController } from '../internals/index.js';
import type { RecordSettings } from './record.js';
import { AUDIT_PATH_CAP, cap } from './redaction.js';

type ControllerMethod = (this: unknown, ...args: unknown[]) => unknown;

/** `Controller` methods whose `request` argument is at this position. */
const REQUEST_AT: Readonly<Record<string, number>> = {
  incomingRequest: 0,
  routeNotFound: 0,
  requestCompleted: 1,
  defaultErrorLog: 1,
  writeHeadError: 1,
  streamError: 1,
  serializerError: 1,
};
const REQUEST_LINES = new Set(['incomingRequest', 'requestCompleted', 'routeNotFound']);

/** The URL as the entry would log it: the path capped, the query redacted (or left out). */
function redactedUrl(url: string, s: RecordSettings): string {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const logged = path.length > AUDIT_PATH_CAP ? cap(path, AUDIT_PATH_CAP) : path;
  if (q === -1 || !s.includeQuery) return logged;
  return `${logged}?${s.redactor.query(url.slice(q + 1))}`;
}

/**
 * The request as a log line may see it: a view on the Fastify request (and on Node's) whose
 * `url`, `originalUrl` and `headers` are redacted; everything else reads through to the request.
 */
function redactedView(request: FastifyRequest, s: RecordSettings): FastifyRequest {
  const raw = request.raw;
  const url = redactedUrl(raw.url ?? '/', s);
  const headers = s.redactor.headers(request.headers, true);
  const rawView = Object.create(raw, {
    url: { value: url, enumerable: true },
    headers: { value: s.redactor.headers(raw.headers, true), enumerable: true },
  }) as IncomingMessage;
  return Object.create(request, {
    raw: { value: rawView, enumerable: true },
    url: { value: url, enumerable: true },
    originalUrl: {
      value: request.originalUrl === raw.url ? url : redactedUrl(request.originalUrl, s),
      enumerable: true,
    },
    headers: { value: headers, enumerable: true },
  }) as FastifyRequest;
}

function viewOf(request: unknown, settings: RecordSettings): unknown {
  const isRequest =
    typeof request === 'object' &&
    request !== null &&
    typeof (request as { raw?: unknown }).raw === 'object';
  return isRequest ? redactedView(request as FastifyRequest, settings) : request;
}

/**
 * One controller method, wrapped. Fixed arities, no rest parameters: `incomingRequest` and
 * `requestCompleted` run on every request, and a dropped line must cost no more than Fastify's
 * own `disableRequestLogging` check.
 */
function wrap(
  name: string,
  method: ControllerMethod,
  at: number,
  drop: boolean,
  settings: RecordSettings,
): ControllerMethod {
  if (at === 0) {
    return function kitRequestLine(
      this: unknown,
      request: unknown,
      reply: unknown,
      metadata: unknown,
    ): unknown {
      if (drop) return undefined;
      return method.call(this, viewOf(request, settings), reply, metadata);
    };
  }
  return function kitRequestLine(
    this: unknown,
    first: unknown,
    request: unknown,
    reply: unknown,
    metadata: unknown,
  ): unknown {
    // `requestCompleted(err, ...)` with an error is Fastify's "request errored" line: kept.
    if (drop && (name !== 'requestCompleted' || first == null)) return undefined;
    return method.call(this, first, viewOf(request, settings), reply, metadata);
  };
}

/**
 * Wraps the log controller of `app` (see the top of this file); `keepRequestLines` keeps
 * `incoming request`, `request completed` and `Route ... not found`. Returns `false` when this
 * Fastify has no controller (before 5.10).
 */
export function installRequestLogging(
  app: FastifyInstance,
  settings: RecordSettings,
  keepRequestLines: boolean,
): boolean {
  const slot = fastifyLogController(app);
  if (slot === undefined) {
    const disabled =
      (app.initialConfig as { disableRequestLogging?: unknown }).disableRequestLogging === true;
    if (!disabled) {
      app.log.warn(
        'Kit audit trail: this Fastify has no log controller (Fastify < 5.10), so Kit cannot keep its "incoming request" lines, ' +
          'which log the raw URL, from writing query parameters the audit redacts; pass disableRequestLogging: true to Fastify() or upgrade Fastify to 5.10 or later',
      );
    }
    return false;
  }
  const original = slot.controller;
  const methods: PropertyDescriptorMap = {};
  for (const [name, at] of Object.entries(REQUEST_AT)) {
    const method = original[name];
    if (typeof method !== 'function') continue;
    methods[name] = {
      value: wrap(
        name,
        method as ControllerMethod,
        at,
        REQUEST_LINES.has(name) && !keepRequestLines,
        settings,
      ),
    };
  }
  // The host's controller stays the prototype: its settings (`disableRequestLogging`, the request
  // id label) and its other methods apply as before.
  slot.replace(Object.create(original, methods) as FastifyLogController);
  return true;
}
