// Requests Node's HTTP parser refuses before Fastify sees a request (headers or a URL over
// maxHeaderSize, a request that did not arrive within requestTimeout, bytes that are not HTTP)
// never reach a route, an error handler or a hook: Node emits `clientError` on the server, and
// Fastify's default listener answers with a JSON body of its own. Kit answers them as every other
// error, with a problem-details body. A host that passed its own `clientErrorHandler` to Fastify
// keeps it.
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

// Fastify binds its default listener (fastify.js, `defaultClientErrorHandler`) to the instance.
const FASTIFY_DEFAULT = 'bound defaultClientErrorHandler';

const ANSWERS: Readonly<Record<string, readonly [number, string]>> = {
  HPE_HEADER_OVERFLOW: [
    431,
    "The request's header fields, its URL included, exceed the server's limit; nothing was done. Send less in them (a long filter list in several requests).",
  ],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [
    413,
    "The request's chunk extensions exceed the server's limit; nothing was done.",
  ],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'The request did not arrive in time; nothing was done.'],
};
const NOT_HTTP: readonly [number, string] = [
  400,
  'The request is not valid HTTP; nothing was done.',
];

/** The bytes of a problem answer to a request Node refused, closing the connection as Node does. */
function clientErrorResponse(code: string | undefined): string {
  const [status, detail] = (code !== undefined ? ANSWERS[code] : undefined) ?? NOT_HTTP;
  const title = STATUS_CODES[status] ?? 'Bad Request';
  const body = JSON.stringify({ type: 'about:blank', title, status, detail });
  return (
    `HTTP/1.1 ${status} ${title}\r\nContent-Type: application/problem+json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `Cache-Control: no-store\r\nConnection: close\r\n\r\n${body}`
  );
}

/**
 * Replaces Fastify's default `clientError` listener with one that answers problem details (431,
 * 413, 408 or 400), logged at debug: the client's mistake, never an error line. Leaves a host's
 * own `clientErrorHandler` in place. Returns whether Kit's listener is installed.
 */
export function installClientErrors(app: FastifyInstance): boolean {
  // A server from serverFactory may be anything; only an EventEmitter with Fastify's listener is touched.
  const server = app.server as unknown as
    { listeners?(event: string): Array<(err: Error, socket: Socket) => void> } | undefined;
  const fastifyDefault =
    typeof server?.listeners === 'function'
      ? server.listeners('clientError').find((listener) => listener.name === FASTIFY_DEFAULT)
      : undefined;
  if (!fastifyDefault) return false;
  app.server.removeListener('clientError', fastifyDefault);
  app.server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    // A reset connection has nothing to answer (as Fastify and Node do).
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    app.log.debug(
      { err: { code: err.code, message: err.message } },
      'kit: a request refused by the HTTP parser',
    );
    // As Node: answer only while no response of this connection has begun.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (socket.writable && !inFlight?.headersSent) socket.write(clientErrorResponse(err.code));
    socket.destroy(err);
  });
  return true;
}
