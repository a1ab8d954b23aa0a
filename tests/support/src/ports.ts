// Free loopback ports for the real servers the tests start (Redis, PostgreSQL, HAProxy, fixtures).
import { createServer } from 'node:net';

/**
 * A free TCP port on 127.0.0.1: bound to port 0 and released, so the server started right after
 * can bind it. Another process may take it in between; the servers' start-up retries on a new one.
 *
 * @example
 * ```ts
 * const port = await freePort();
 * spawn('redis-server', ['--port', String(port)]);
 * ```
 */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
