// @test-lines: every - raw sockets: malformed requests on this line
// Requests Node's HTTP parser refuses before Fastify routes them: headers or a URL over the size
// limit (a 16 KB filter list), a request that does not arrive in time, bytes that are not HTTP.
// Over real sockets: each is a problem-details answer, logged below error level; a host's own
// clientErrorHandler is left in place.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { kitApp } from '@kit/test-support/kit-app';

/** Writes `request` on a fresh connection and resolves with everything the server sends before closing it. */
function exchange(port: number, request: string, waitMs = 0): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', (err: NodeJS.ErrnoException) =>
      err.code === 'ECONNRESET' ? resolve(received) : reject(err),
    );
    socket.on('close', () => resolve(received));
    socket.on('connect', () => {
      socket.write(request);
      if (waitMs === 0) return;
      setTimeout(() => socket.destroy(), waitMs);
    });
  });
}

function parse(raw: string): {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
} {
  const [head = '', body = ''] = raw.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((l) => [
      l.slice(0, l.indexOf(':')).toLowerCase(),
      l.slice(l.indexOf(':') + 1).trim(),
    ]),
  );
  return {
    status: Number(statusLine.split(' ')[1]),
    headers,
    body: JSON.parse(body) as Record<string, unknown>,
  };
}

/** A listening Kit app whose log lines go to `lines`, with one route that echoes its query. */
async function listeningApp(
  server: FastifyServerOptions,
  lines: Array<{ level: number; msg: string }>,
  problemDetails = true,
): Promise<FastifyInstance> {
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
      done();
    },
  });
  const app = await kitApp(
    [],
    (opt) => {
      opt.problemDetails = problemDetails;
    },
    {
      app: Fastify({ ...server, logger: { level: 'trace', stream } }),
      routes: (a) => a.get('/api/items', async (request) => ({ query: request.query })),
      ready: false,
    },
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app;
}

describe('requests the HTTP parser refuses', () => {
  const lines: Array<{ level: number; msg: string }> = [];
  let app: FastifyInstance;
  let port: number;

  before(async () => {
    // Node checks request timeouts every connectionsCheckingInterval (30 s by default).
    app = await listeningApp(
      {
        serverFactory: (handler) =>
          createServer({ requestTimeout: 300, connectionsCheckingInterval: 50 }, handler),
      },
      lines,
    );
    port = (app.server.address() as { port: number }).port;
  });
  after(async () => {
    await app?.close();
  });

  it('a 16 KB query (a long filter list) is a 431 problem answer, and the connection closes', async () => {
    const ids = Array.from({ length: 3000 }, (_, i) => 100_000 + i).join(',');
    const raw = await exchange(
      port,
      `GET /api/items?filter[id][in]=${ids} HTTP/1.1\r\nHost: x\r\n\r\n`,
    );
    const { status, headers, body } = parse(raw);
    assert.equal(status, 431, raw.slice(0, 200));
    assert.equal(headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.equal(headers.connection, 'close');
    assert.equal(Number(headers['content-length']), Buffer.byteLength(JSON.stringify(body)));
    assert.deepEqual(Object.keys(body), ['type', 'title', 'status', 'detail']);
    assert.deepEqual(
      [body.type, body.title, body.status],
      ['about:blank', 'Request Header Fields Too Large', 431],
    );
    assert.match(String(body.detail), /exceed the server's limit; nothing was done/);
    // A header over the limit the same way.
    const header = parse(
      await exchange(
        port,
        `GET /api/items HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      ),
    );
    assert.equal(header.status, 431);
  });

  it('bytes that are not HTTP are a 400 problem answer', async () => {
    for (const request of [
      'GARBAGE\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
      'GET /\u0001 HTTP/1.1\r\n\r\n',
    ]) {
      const { status, headers, body } = parse(await exchange(port, request));
      assert.equal(status, 400, request);
      assert.equal(headers['content-type'], 'application/problem+json; charset=utf-8');
      assert.deepEqual(
        [body.title, body.status, body.detail],
        ['Bad Request', 400, 'The request is not valid HTTP; nothing was done.'],
      );
    }
  });

  it('a request that does not arrive within requestTimeout is a 408 problem answer', async () => {
    const raw = await exchange(port, 'GET /api/items HTTP/1.1\r\nHost: x\r\n', 3000);
    const { status, body } = parse(raw);
    assert.equal(status, 408, raw);
    assert.equal(body.title, 'Request Timeout');
  });

  it('none of them logged at error level; each at debug; a good request still works', async () => {
    assert.deepEqual(
      lines.filter((l) => l.level >= 50),
      [],
    );
    assert.ok(lines.some((l) => l.level === 20 && /refused by the HTTP parser/.test(l.msg)));
    const ok = await exchange(
      port,
      'GET /api/items?a=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    assert.match(ok, /^HTTP\/1\.1 200 OK/);
  });

  it("with opt.problemDetails = false, Fastify's own answer stays", async () => {
    const plain = await listeningApp({}, [], false);
    try {
      const raw = await exchange(
        (plain.server.address() as { port: number }).port,
        'GARBAGE\r\n\r\n',
      );
      assert.match(raw, /Content-Type: application\/json/);
      assert.match(raw, /"statusCode":400/);
    } finally {
      await plain.close();
    }
  });

  it("a host's own clientErrorHandler is left in place", async () => {
    const own: string[] = [];
    const custom = await listeningApp(
      {
        clientErrorHandler(err, socket) {
          own.push(String((err as NodeJS.ErrnoException).code));
          socket.end(
            'HTTP/1.1 400 Bad Request\r\nContent-Length: 3\r\nConnection: close\r\n\r\nown',
          );
        },
      },
      [],
    );
    try {
      const raw = await exchange(
        (custom.server.address() as { port: number }).port,
        'GARBAGE\r\n\r\n',
      );
      assert.match(raw, /\r\n\r\nown$/);
      assert.equal(own.length, 1);
      assert.equal(custom.server.listeners('clientError').length, 1);
    } finally {
      await custom.close();
    }
  });
});
