// The service's side of the PGlite worker thread (worker.ts): start it, send it statements, close
// it. PGlite runs its WebAssembly on the thread that calls it, so on the service's own thread every
// statement would hold up the event loop; on a worker the service's thread only passes messages
// (docs/benchmarks.md has the figures).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { KitError } from '@kit/core';
import { DatabaseUnavailableError } from '../../errors.js';
import type { ErrorFields, WorkerMessage, WorkerQuery, WorkerStart } from './protocol.js';

/** What a statement answers. */
export interface ThreadResult {
  readonly command: string | undefined;
  readonly rowCount: number | undefined;
  readonly rows: unknown[];
}

interface Pending {
  resolve(result: ThreadResult): void;
  reject(err: unknown): void;
}

/**
 * How to start the worker: its compiled file beside this module, or the package's export when this
 * module was bundled into a host. Run from TypeScript source (this repository's tests and sample,
 * under tsx), the worker registers tsx itself first: Node 20 does not apply a loader given by
 * `--import` to worker threads.
 */
function workerEntry(): { readonly entry: URL | string; readonly eval: boolean } {
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    const source = new URL('./worker.ts', here).href;
    const tsx = import.meta.resolve('tsx/esm/api');
    return {
      entry: `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(source)}); });`,
      eval: true,
    };
  }
  const beside = new URL('./worker.js', here);
  if (existsSync(fileURLToPath(beside))) return { entry: beside, eval: false };
  try {
    return { entry: new URL(import.meta.resolve('@kit/autocrud/pglite-worker')), eval: false };
  } catch {
    throw new KitError(
      'KIT_ERR_AUTOCRUD_ENGINE',
      `PGlite runs in a worker thread whose file (${fileURLToPath(beside)}) is missing: when bundling a host, keep @kit/autocrud (and @electric-sql/pglite) external.`,
    );
  }
}

/** An Error rebuilt from the worker's plain fields, with its SQLSTATE `code` and the rest, as PGlite threw it. */
function rebuild(fields: ErrorFields): Error {
  const err = new Error(fields.message);
  Object.assign(err, fields);
  return err;
}

/** PGlite in a worker thread: one statement at a time, in order; `rows` as PGlite parses them (structured clone keeps Date and bigint). */
export class PGliteThread {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #next = 0;
  #stopped: string | undefined;
  #closed: Promise<void> | undefined;

  private constructor(worker: Worker) {
    this.#worker = worker;
  }

  /**
   * Starts PGlite on `directory` (undefined: in memory) and resolves once it accepts statements.
   * Rejects with `KIT_ERR_AUTOCRUD_ENGINE` naming `target` and PostgreSQL's own reason.
   */
  static start(
    directory: string | undefined,
    target: string,
  ): Promise<{ thread: PGliteThread; snapshot: string; ms: number }> {
    const { entry, eval: isCode } = workerEntry();
    const worker = new Worker(entry, {
      eval: isCode,
      workerData: { directory } satisfies WorkerStart,
    });
    const thread = new PGliteThread(worker);
    return new Promise((resolve, reject) => {
      const fail = (reason: string, cause?: unknown) =>
        reject(
          new KitError('KIT_ERR_AUTOCRUD_ENGINE', `PGlite could not start (${target}): ${reason}`, {
            cause,
          }),
        );
      const early = (err: Error) => fail(err.message, err);
      const exited = (code: number) =>
        fail(`its thread ended (exit code ${code}) before it was ready`);
      worker.on('error', early).on('exit', exited);
      worker.once('message', (message: WorkerMessage) => {
        worker.off('error', early).off('exit', exited);
        if (message.kind === 'ready') {
          thread.#listen();
          resolve({ thread, snapshot: message.snapshot, ms: message.ms });
          return;
        }
        const reason =
          message.kind === 'failed' ? message.error.message : 'an unexpected first message';
        // PostgreSQL's FATAL and DETAIL lines say what is wrong with a directory (another version's files, damage).
        const said =
          message.kind === 'failed'
            ? message.stderr
                .filter((line) => /\b(FATAL|PANIC|DETAIL|HINT):/.test(line))
                .map((line) => line.replace(/^.*?\b(FATAL|PANIC|DETAIL|HINT):\s*/, '$1: '))
            : [];
        fail([reason, ...said].join('; '));
      });
    });
  }

  #listen(): void {
    this.#worker.unref();
    this.#worker.on('message', (message: WorkerMessage) => {
      if (message.kind !== 'result' && message.kind !== 'error') return;
      const pending = this.#pending.get(message.id);
      if (!pending) return;
      this.#pending.delete(message.id);
      if (this.#pending.size === 0) this.#worker.unref();
      if (message.kind === 'result') pending.resolve(message);
      else pending.reject(rebuild(message.error));
    });
    // PGlite's WASM aborting (out of memory, an internal error) ends the thread: what was asked of it fails, later calls too.
    this.#worker.on('error', (err) => this.#stop(`PGlite stopped: ${err.message}`));
    this.#worker.on('exit', (code) =>
      this.#stop(this.#closed ? 'closed' : `PGlite stopped (exit code ${code})`),
    );
  }

  #stop(reason: string): void {
    this.#stopped ??= reason;
    for (const pending of this.#pending.values())
      pending.reject(new DatabaseUnavailableError(this.#stopped));
    this.#pending.clear();
  }

  /** Why the thread no longer runs, or undefined while it does. */
  get stopped(): string | undefined {
    return this.#stopped;
  }

  /** Runs one statement; rejects with the driver's error (SQLSTATE `code`), or `DatabaseUnavailableError` once the thread stopped. */
  query(sql: string, parameters: readonly unknown[]): Promise<ThreadResult> {
    if (this.#stopped !== undefined)
      return Promise.reject(new DatabaseUnavailableError(this.#stopped));
    const id = this.#next++;
    // Ref'd only while a statement is out: an idle database does not keep the process alive, a query in flight does.
    if (this.#pending.size === 0) this.#worker.ref();
    return new Promise<ThreadResult>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, sql, parameters } satisfies WorkerQuery);
    });
  }

  /**
   * Closes PGlite (it writes what is buffered to its directory) and ends the thread. A statement
   * still running is waited for up to `graceMs`; then the thread is ended as a crash would end it
   * (a directory recovers from its write-ahead log on the next start).
   */
  close(graceMs: number): Promise<void> {
    this.#closed ??= new Promise<void>((resolve) => {
      if (this.#stopped !== undefined) return resolve();
      this.#worker.ref();
      const timer = setTimeout(() => void this.#worker.terminate(), graceMs);
      this.#worker.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      this.#worker.postMessage('close');
    });
    return this.#closed;
  }
}
