// Steady keep-alive load through the balancer: a fixed number of workers per frontend, each on
// its own keep-alive connection of a Node http.Agent, paced so that the whole load stays at a
// target rate (reads and writes mixed). Every request carries its own X-Correlation-Id, so the
// audit entries of every instance can be matched to what the client saw; every write carries an
// Idempotency-Key and a unique name, so acknowledged writes can be looked up in PostgreSQL.
import http from 'node:http';
import type { Frontend } from '@kit/test-support/haproxy';

export type Outcome = 'ok' | 'non2xx' | 'reset' | 'refused' | 'timeout' | 'other';

export interface LoadOptions {
  /** Frontend -> port of the balancer. */
  readonly ports: Readonly<Partial<Record<Frontend, number>>>;
  /** Requests per second, all frontends together. */
  readonly rate: number;
  /** Concurrent keep-alive connections per frontend. */
  readonly connections: number;
  /** Prefix of correlation ids and product names: unique per run. */
  readonly runId: string;
  /** A request not answered within this fails as `timeout`. */
  readonly requestTimeoutMs?: number;
}

export interface LoadCounts {
  sent: number;
  ok: number;
  non2xx: number;
  reset: number;
  refused: number;
  timeout: number;
  other: number;
  reads: number;
  writes: number;
  /** Status code -> count, for the non-2xx answers. */
  statuses: Record<string, number>;
  /** The first few failures, for the report. */
  samples: string[];
}

const newCounts = (): LoadCounts => ({
  sent: 0,
  ok: 0,
  non2xx: 0,
  reset: 0,
  refused: 0,
  timeout: 0,
  other: 0,
  reads: 0,
  writes: 0,
  statuses: {},
  samples: [],
});

export class Load {
  readonly counts: Record<Frontend, LoadCounts> = { http: newCounts(), tcp: newCounts() };
  /**
   * Correlation ids of the requests an instance answered (a complete response carrying the
   * request's X-Correlation-Id back, whatever its status); answers the balancer wrote itself
   * (its 503 "no server is available") do not carry it.
   */
  readonly completed = new Set<string>();
  /** Responses the balancer wrote itself. */
  byBalancer = 0;
  /** Correlation ids of the requests that failed at the client (reset, refused, timeout). */
  readonly failed = new Set<string>();
  /** Names of the products whose creation was acknowledged (201). */
  readonly acknowledged = new Set<string>();
  #ids: number[] = [];
  #stopped = false;
  #workers: Promise<void>[] = [];
  readonly #agents: http.Agent[] = [];
  #n = 0;
  started = 0;
  stoppedAt = 0;

  constructor(readonly options: LoadOptions) {}

  start(): void {
    this.started = performance.now();
    const frontends = Object.keys(this.options.ports) as Frontend[];
    const workers = frontends.length * this.options.connections;
    // Each worker sends at most one request per slot: the rate is shared evenly.
    const slotMs = (1000 * workers) / this.options.rate;
    for (const frontend of frontends) {
      // FIFO reuse: every connection stays busy, none idles long enough for a server to close it.
      const agent = new http.Agent({
        keepAlive: true,
        maxSockets: this.options.connections,
        scheduling: 'fifo',
      });
      this.#agents.push(agent);
      for (let w = 0; w < this.options.connections; w++) {
        this.#workers.push(
          this.#worker(frontend, agent, slotMs, (slotMs * (w + 1)) / this.options.connections),
        );
      }
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#workers);
    this.stoppedAt = performance.now();
    for (const agent of this.#agents) agent.destroy();
  }

  total(): LoadCounts {
    const t = newCounts();
    for (const c of Object.values(this.counts)) {
      for (const k of [
        'sent',
        'ok',
        'non2xx',
        'reset',
        'refused',
        'timeout',
        'other',
        'reads',
        'writes',
      ] as const)
        t[k] += c[k];
      for (const [s, n] of Object.entries(c.statuses)) t.statuses[s] = (t.statuses[s] ?? 0) + n;
      t.samples.push(...c.samples);
    }
    return t;
  }

  failures(): number {
    const t = this.total();
    return t.non2xx + t.reset + t.refused + t.timeout + t.other;
  }

  async #worker(
    frontend: Frontend,
    agent: http.Agent,
    slotMs: number,
    offsetMs: number,
  ): Promise<void> {
    let next = performance.now() + offsetMs;
    while (!this.#stopped) {
      const wait = next - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      if (this.#stopped) break;
      next += slotMs;
      // A slow answer must not make the worker burst to catch up.
      if (next < performance.now()) next = performance.now();
      await this.#request(frontend, agent);
    }
  }

  async #request(frontend: Frontend, agent: http.Agent): Promise<void> {
    const n = ++this.#n;
    const id = `${this.options.runId}-${n}`;
    const c = this.counts[frontend];
    c.sent += 1;
    const kind = n % 3;
    const known = this.#ids.length > 0 ? this.#ids[n % this.#ids.length] : undefined;
    const name = `${this.options.runId}-product-${n}`;
    let method = 'GET';
    let path: string;
    let body: string | undefined;
    const headers: Record<string, string> = { 'x-correlation-id': id };
    if (kind === 0) {
      method = 'POST';
      path = '/api/products';
      body = JSON.stringify({ name, price: n % 100 });
      headers['content-type'] = 'application/json';
      headers['idempotency-key'] = id;
      c.writes += 1;
    } else {
      path =
        kind === 1 && known !== undefined
          ? `/api/products/${known}`
          : '/api/products?pageSize=5&sort=-id&count=false';
      c.reads += 1;
    }
    const result = await send(
      this.options.ports[frontend]!,
      agent,
      method,
      path,
      headers,
      body,
      this.options.requestTimeoutMs ?? 10_000,
    );
    if (result.status !== undefined) {
      if (result.correlationId === id) this.completed.add(id);
      else this.byBalancer += 1;
      if (result.status >= 200 && result.status < 300) {
        c.ok += 1;
        if (method === 'POST' && result.status === 201) {
          this.acknowledged.add(name);
          const created = JSON.parse(result.body) as { id?: number };
          if (typeof created.id === 'number' && this.#ids.length < 500) this.#ids.push(created.id);
        }
      } else {
        c.non2xx += 1;
        c.statuses[result.status] = (c.statuses[result.status] ?? 0) + 1;
        if (c.samples.length < 5)
          c.samples.push(
            `${frontend} ${method} ${path} -> ${result.status} ${result.body.slice(0, 160)}`,
          );
      }
      return;
    }
    this.failed.add(id);
    c[result.outcome] += 1;
    if (c.samples.length < 5) c.samples.push(`${frontend} ${method} ${path} -> ${result.error}`);
  }
}

interface Sent {
  status?: number;
  correlationId?: string | string[] | undefined;
  body: string;
  outcome: Exclude<Outcome, 'ok' | 'non2xx'>;
  error?: string;
}

function send(
  port: number,
  agent: http.Agent,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string | undefined,
  timeoutMs: number,
): Promise<Sent> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (s: Sent) => {
      if (!settled) {
        settled = true;
        resolve(s);
      }
    };
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () =>
        settle({
          status: res.statusCode ?? 0,
          correlationId: res.headers['x-correlation-id'],
          body: text,
          outcome: 'other',
        }),
      );
      res.on('error', (err: NodeJS.ErrnoException) => settle(failure(err)));
    });
    req.setTimeout(timeoutMs, () => {
      settle({ body: '', outcome: 'timeout', error: `no answer within ${timeoutMs} ms` });
      req.destroy();
    });
    req.on('error', (err: NodeJS.ErrnoException) => settle(failure(err)));
    req.end(body);
  });
}

function failure(err: NodeJS.ErrnoException): Sent {
  const outcome =
    err.code === 'ECONNREFUSED'
      ? 'refused'
      : err.code === 'ECONNRESET' || err.code === 'EPIPE' || /socket hang up/.test(err.message)
        ? 'reset'
        : 'other';
  return { body: '', outcome, error: `${err.code ?? ''} ${err.message}` };
}
