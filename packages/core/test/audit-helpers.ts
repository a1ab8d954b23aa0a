// Shared by the audit-*.test.ts files: a real Fastify with Kit and the audit trail, its pino
// output captured line by line through a destination stream, and a few sinks to observe.
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import {
  addKit,
  useKit,
  type AuditLogEntry,
  type AuditTrailOptions,
  type IAuditSink,
  type KitOption,
} from '@kit/core';
import {
  startProcess,
  stopProcess,
  type Exit as ProcessExit,
  type Spawned,
} from '@kit/test-support/processes';

/** One parsed pino line. */
export type LogLine = Record<string, unknown> & { level: number; msg?: string };

/** pino's numeric levels. */
export const LEVEL = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const;

/**
 * The audit lines: the audit trail writes through the root logger (`app.log`), so its lines are
 * the only ones without the per-request `reqId` binding, apart from Fastify's own root lines
 * (listening, client errors) and Kit's reports, which carry an `err` or a known prefix.
 */
function isAuditLine(l: LogLine): boolean {
  return (
    l.reqId === undefined &&
    l.err === undefined &&
    typeof l.msg === 'string' &&
    !l.msg.startsWith('Kit ') &&
    !l.msg.startsWith('Server listening')
  );
}

/** A destination that keeps every write as it came: the bytes a logger wrote, write by write. */
export class Chunks {
  readonly writes: string[] = [];
  write(chunk: string): void {
    this.writes.push(chunk);
  }
  get text(): string {
    return this.writes.join('');
  }
}

/** A pino destination that keeps every line, parsed. */
export class LogCapture {
  readonly lines: LogLine[] = [];
  /** How many writes to this destination carried audit lines (Fastify's own lines come in writes of their own). */
  auditWrites = 0;

  write(chunk: string): void {
    let audit = false;
    for (const text of chunk.split('\n')) {
      if (text === '') continue;
      const line = JSON.parse(text) as LogLine;
      this.lines.push(line);
      audit ||= isAuditLine(line);
    }
    if (audit) this.auditWrites++;
  }

  audit(): LogLine[] {
    return this.lines.filter(isAuditLine);
  }

  clear(): void {
    this.lines.length = 0;
  }
}

export interface AuditAppOptions {
  /** Adjusts the audit options (the action of `configureAuditTrail`). */
  audit?: (a: AuditTrailOptions) => void;
  /** Further Kit options (sink factory, health path, ...). */
  kit?: (opt: KitOption) => void;
  /** Extra routes, added before `useKit`. */
  routes?: (app: FastifyInstance) => void;
  /** Extra Fastify options. */
  fastify?: FastifyServerOptions;
  /** Leave the audit trail off. */
  off?: boolean;
}

export interface AuditApp {
  app: FastifyInstance;
  logs: LogCapture;
}

/**
 * Fastify with Kit (no endpoint classes), pino at `trace` into a `LogCapture`, the audit trail on,
 * and the standard routes:
 * `GET /hello` -> `{ ok: true }`, `GET /boom` throws, `GET /teapot` -> 418, `GET /id` -> request
 * id, `GET /slow?ms=n` answers after n ms.
 */
export async function auditApp(options: AuditAppOptions = {}): Promise<AuditApp> {
  const logs = new LogCapture();
  const app = Fastify({ logger: { level: 'trace', stream: logs }, ...options.fastify });
  addKit(app, [], (opt) => {
    if (!options.off) opt.configureAuditTrail(options.audit);
    options.kit?.(opt);
  });
  app.get('/hello', async () => ({ ok: true }));
  app.get('/boom', async () => {
    throw new Error('kaboom');
  });
  app.get('/teapot', async (_req, reply) => reply.code(418).send({ short: 'and stout' }));
  app.get('/id', async (req) => ({ id: req.id }));
  app.get<{ Querystring: { ms?: string } }>('/slow', async (req) => {
    await new Promise((r) => setTimeout(r, Number(req.query.ms ?? 50)));
    return { slow: true };
  });
  options.routes?.(app);
  await useKit(app);
  await app.ready();
  return { app, logs };
}

/** Lets the response's `close` event (and the synchronous audit write) happen. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A sink that records every call. `writeBatchAsync` is present unless `batch` is false. */
export class RecordingSink implements IAuditSink {
  readonly entries: AuditLogEntry[] = [];
  readonly batches: number[] = [];
  readonly signals: AbortSignal[] = [];

  constructor(batch = true) {
    if (!batch) (this as { writeBatchAsync?: unknown }).writeBatchAsync = undefined;
  }

  async writeAsync(entry: AuditLogEntry, signal?: AbortSignal): Promise<void> {
    this.entries.push(entry);
    if (signal) this.signals.push(signal);
  }

  async writeBatchAsync(entries: readonly AuditLogEntry[], signal?: AbortSignal): Promise<void> {
    this.batches.push(entries.length);
    this.entries.push(...entries);
    if (signal) this.signals.push(signal);
  }
}

/** Sends raw bytes over a new TCP connection; resolves with the socket once connected. */
export function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Reads a whole HTTP/1.1 response from a raw socket (the server closes it: `Connection: close`). */
export function readAll(socket: net.Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (data += d));
    socket.once('end', () => resolve(data));
    socket.once('error', reject);
  });
}

/** The port of a listening app. */
export function portOf(app: FastifyInstance): number {
  return (app.server.address() as net.AddressInfo).port;
}

/** How a child process ended. */
export type Exit = Pick<ProcessExit, 'code' | 'signal'>;

/**
 * Characters a JSON line must escape or keep as they are (quotes, backslashes, control and
 * separator characters, a surrogate pair, Latin-1 and plain ASCII): the values the line tests put
 * in every field to compare Kit's line with pino's.
 */
export const ODD_TEXT: readonly string[] = [
  '"',
  '\\',
  '\u0000',
  '\u001f',
  '\u007f',
  '\u0085',
  '\u009f',
  '\u2028',
  '\u2029',
  '\ud83d\ude00',
  'é',
  '~',
];

/** A host script running in a child process, with an audit file of its own. */
export interface HostProcess extends Pick<
  Spawned,
  'child' | 'stdout' | 'lines' | 'closed' | 'stderr'
> {
  /** `http://127.0.0.1:<port>` of the host. */
  base: string;
  /** The audit file (a temporary directory's), the script's first argument. */
  file: string;
  exited: Promise<Exit>;
  /** Kills the host (SIGKILL) and removes its directory. */
  close(): Promise<void>;
}

/** The `READY <port>` line the audit host scripts print once they listen. */
function readyLine(line: string): { port: number } | undefined {
  const m = /READY (\d+)/.exec(line);
  return m ? { port: Number(m[1]) } : undefined;
}

/**
 * Runs `node --import tsx <script> <audit-file> ...args` and resolves once it prints
 * `READY <port>`; rejects if it exits first.
 */
export async function startHostProcess(
  script: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<HostProcess> {
  const dir = await mkdtemp(path.join(tmpdir(), 'kit-audit-'));
  const file = path.join(dir, 'audit.jsonl');
  try {
    const host = await startProcess(script, env, { args: [file, ...args], ready: readyLine });
    const close = async (): Promise<void> => {
      await stopProcess(host, 'SIGKILL');
      await rm(dir, { recursive: true, force: true });
    };
    // Code and signal only: the tests compare the exit with Node's own for the same signal.
    const exited = host.exited.then(({ code, signal }) => ({ code, signal }));
    return {
      child: host.child,
      base: host.base,
      file,
      stdout: host.stdout,
      lines: host.lines,
      closed: host.closed,
      stderr: host.stderr,
      exited,
      close,
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
