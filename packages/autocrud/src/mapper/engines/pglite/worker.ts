// The worker thread PGlite runs in (started by thread.ts). PGlite is PostgreSQL compiled to
// WASM and runs synchronously on the thread that calls it: its start (initdb, seconds) and every
// statement would otherwise stop the service's event loop for as long as they run, /livez included.
// Here, one statement at a time, in the order they come.
import { parentPort, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import type { PGlite } from '@electric-sql/pglite';
import { errorFields, type WorkerMessage, type WorkerQuery, type WorkerStart } from './protocol.js';
import { startInDirectory, startInMemory } from './snapshot.js';

const port = parentPort;
if (!port) throw new Error('worker.ts runs as a worker thread (see thread.ts)');
const { directory } = workerData as WorkerStart;

/** PostgreSQL's own lines (its FATAL and DETAIL explain a directory it cannot open); the last ones go into a start-up failure. */
const stderr: string[] = [];
const options = {
  onStderr: (text: string) => {
    stderr.push(text.trim());
    if (stderr.length > 20) stderr.shift();
    return true;
  },
  onStdout: () => true,
};

function post(message: WorkerMessage): void {
  port!.postMessage(message);
}

async function start(): Promise<PGlite> {
  const began = performance.now();
  const { db, snapshot } =
    directory === undefined
      ? await startInMemory(options)
      : await startInDirectory(directory, options);
  post({ kind: 'ready', snapshot, ms: performance.now() - began });
  return db;
}

let db: PGlite;
try {
  db = await start();
} catch (err) {
  post({ kind: 'failed', error: errorFields(err), stderr });
  port.close();
  process.exit(0);
}

port.on('message', (message: WorkerQuery | 'close') => {
  if (message === 'close') {
    // PGlite's close() writes what is still buffered to the directory; the port closes after it.
    void db.close().finally(() => port.close());
    return;
  }
  // PGlite queues calls itself (runExclusive), one at a time, in order.
  db.query(message.sql, [...message.parameters]).then(
    (result) =>
      post({
        kind: 'result',
        id: message.id,
        command: (result as { command?: string }).command,
        rowCount: result.affectedRows,
        rows: result.rows as unknown[],
      }),
    (err: unknown) => post({ kind: 'error', id: message.id, error: errorFields(err) }),
  );
});
