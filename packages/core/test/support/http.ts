// Small HTTP helpers for tests that need real sockets (timing, concurrency, child processes).
import http from 'node:http';

export interface HttpAnswer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
  /** Milliseconds from sending the request to the end of the response. */
  readonly ms: number;
}

/** GET over a real socket; rejects on connection errors. */
export function get(url: string, agent?: http.Agent): Promise<HttpAnswer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: agent ?? false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body,
          ms: performance.now() - started,
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

/** Parses a JSON body into a loosely typed record for assertions. */
export function json(answer: {
  body: string;
}): Record<string, unknown> & { checks?: Record<string, Record<string, unknown>> } {
  return JSON.parse(answer.body) as Record<string, unknown>;
}

/** A promise with its resolve function, to hold a check or a warm-up open from the test. */
export function deferred<T = void>(): {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (err: unknown) => void;
} {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
