import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';

/**
 * How long a connection with no request in progress may stay open once the drain has begun. A
 * keep-alive client under load sends its next request within milliseconds, and that request is
 * answered (with `Connection: close`) rather than cut; a client idle for this long is not about
 * to send one.
 */
export const IDLE_GRACE_MS = 500;
const TICK_MS = 100;
/** Closed connections are swept from the set once it holds this many, or twice the open ones. */
const SWEEP_MIN = 64;

interface HttpSocket extends Socket {
  // The response being written on this connection, if any: the field Node's own
  // closeIdleConnections() reads to tell busy connections from idle ones.
  _httpMessage?: ServerResponse | null;
}

function closeAfterResponse(req: IncomingMessage, res: ServerResponse): void {
  if (req.httpVersionMajor === 1) res.setHeader('connection', 'close');
}

/**
 * Closes an HTTP/1 server's keep-alive connections without cutting a request.
 *
 * A server that closes an idle keep-alive connection races the client, which may be sending its
 * next request at that moment: the request is lost with ECONNRESET, neither answered nor audited.
 * The race-free way is to answer that next request with `Connection: close`, after which the
 * client sends nothing more on the connection. So the drain stops accepting connections, puts
 * `Connection: close` on every response from then on, lets each busy connection close after its
 * response, and closes a connection only once it has been idle for `IDLE_GRACE_MS`.
 */
export class ConnectionDrain {
  readonly #server: Server;
  readonly #sockets = new Set<HttpSocket>();
  readonly #idleSince = new Map<HttpSocket, number>();
  #sweepAt = SWEEP_MIN;
  #draining = false;
  #emptied: (() => void) | undefined;

  constructor(server: Server) {
    this.#server = server;
    // An HTTPS server speaks HTTP on the TLS socket, not on the TCP one under it.
    const event = server instanceof TlsServer ? 'secureConnection' : 'connection';
    // No listener goes on the connection until the drain begins. A `once('close')` on every
    // connection put long-lived objects on two of EventEmitter's allocation sites (the `once`
    // wrapper and the two-listener array). After a burst of new connections, V8 could then
    // allocate everything from those sites in the old generation, including each response's
    // array of `finish` listeners. Each request's garbage then outlived the scavenges, in many of
    // the benchmark servers' lives, for more CPU per request (docs/decisions.md, "Connection
    // tracking and V8's pretenuring"). Closed connections are swept instead.
    server.on(event, (socket: HttpSocket) => {
      this.#sockets.add(socket);
      if (this.#draining) this.#watch(socket);
      else if (this.#sockets.size >= this.#sweepAt) this.#sweep();
    });
  }

  /** Forgets the closed connections; amortised, the set holds at most twice the open ones. */
  #sweep(): void {
    for (const socket of this.#sockets) if (socket.closed) this.#sockets.delete(socket);
    this.#sweepAt = Math.max(SWEEP_MIN, 2 * this.#sockets.size);
  }

  /** From the drain on, a connection leaves the set when it closes. */
  #watch(socket: HttpSocket): void {
    socket.once('close', () => {
      this.#sockets.delete(socket);
      this.#idleSince.delete(socket);
      if (this.#sockets.size === 0) this.#emptied?.();
    });
  }

  /**
   * Stops accepting connections and resolves once every open connection has closed, or when
   * `signal` aborts (the connections left are then the caller's to cut).
   */
  async drain(signal: AbortSignal): Promise<void> {
    const server = this.#server;
    server.prependListener('request', closeAfterResponse);
    if (!this.#draining) {
      this.#draining = true;
      this.#sweep();
      for (const socket of this.#sockets) this.#watch(socket);
    }
    for (const socket of this.#sockets) {
      const res = socket._httpMessage;
      if (res && !res.headersSent) res.setHeader('connection', 'close');
    }
    // http's own server.close() would also destroy the idle connections at once, racing their
    // clients' next requests; net's stops accepting and leaves the open connections alone.
    if (server.listening) NetServer.prototype.close.call(server);
    if (this.#sockets.size === 0 || signal.aborted) return;
    const ticker = setInterval(() => this.#closeIdle(), TICK_MS);
    try {
      await new Promise<void>((resolve) => {
        this.#emptied = resolve;
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
    } finally {
      clearInterval(ticker);
      this.#emptied = undefined;
    }
  }

  #closeIdle(): void {
    const now = performance.now();
    for (const socket of this.#sockets) {
      // Busy, or already closing: it ends on its own.
      if (socket._httpMessage || socket.writableEnded) {
        this.#idleSince.delete(socket);
        continue;
      }
      const since = this.#idleSince.get(socket);
      if (since === undefined) this.#idleSince.set(socket, now);
      // A request arriving this very moment is refused by the reset, not half-served into a
      // closed connection, so the client at least learns it was not processed.
      else if (now - since >= IDLE_GRACE_MS) socket.destroy();
    }
  }
}
