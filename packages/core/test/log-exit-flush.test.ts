// @test-lines: every - log flushing on exit and signals on this line
// What a process logs is written whole before it ends, also when stdout is a pipe its reader has
// let fill (a log shipper that is behind, a container runtime under load). pino's asynchronous
// destination then has a write in flight that the pipe took only part of; a flush that does not
// wait for it writes the next lines after the part, and the line in flight is torn (its tail lost).
// Each round starts a real child process, lets it fill the pipe, signals it while nothing reads,
// reads again after READ_AFTER_MS (inside Kit's one-second exit bound) and checks every line.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { skipHeavy } from '@kit/test-support/heavy';
import { typescriptArgs } from '@kit/test-support/node-args';
import { sleep } from './support/http.ts';

const HOST = fileURLToPath(new URL('./fixtures/lifecycle/pipe-host.ts', import.meta.url));
const LINES = 3000;
// Five rounds of each case where the heavy tests run (one CI line, and a developer's `npm test`),
// two on the other lines: every Node line still sees each case provoked, and CI saves a minute.
const ROUNDS = skipHeavy ? 2 : 5;
const READ_AFTER_MS = 300;

interface Ended {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** From the second signal (when sent) to the end of the process. */
  readonly afterSecondMs?: number;
}

// A second signal this long after the first: inside the exit flush, the pipe still full.
const SECOND_AFTER_MS = 100;

async function round(mode: 'graceful' | 'signal', second = false): Promise<Ended> {
  const child = spawn(process.execPath, [...typescriptArgs, HOST, mode], {
    cwd: new URL('./fixtures/lifecycle/', import.meta.url),
    env: { ...process.env, NODE_ENV: 'production', LINES: String(LINES) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  // Listened to from the start: a process a second signal ends may close before stdout is read.
  const closed = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.on('close', (c, s) => resolve([c, s])),
  );
  let stderr = '';
  const ready = new Promise<void>((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      if (stderr.includes('ready\n')) resolve();
    });
    child.once('exit', () => reject(new Error(`host exited before it was ready:\n${stderr}`)));
  });
  // stdout is not read yet: the pipe and the stream's buffer fill and the host's writes stall.
  child.stdout.pause();
  await ready;
  child.kill('SIGTERM');
  let secondAt: number | undefined;
  if (second) {
    await sleep(SECOND_AFTER_MS);
    secondAt = Date.now();
    child.kill('SIGTERM');
  }
  await sleep(READ_AFTER_MS);
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stdout.resume();
  const [code, signal] = await closed;
  clearTimeout(killer);
  return {
    code,
    signal,
    stdout,
    stderr,
    ...(secondAt === undefined ? {} : { afterSecondMs: Date.now() - secondAt }),
  };
}

function parse(stdout: string): Array<Record<string, unknown>> {
  assert.ok(stdout.endsWith('\n'), 'the output ends with a whole line');
  return stdout
    .slice(0, -1)
    .split('\n')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        assert.fail(`a line is not one JSON entry (torn or interleaved):\n${line.slice(0, 400)}`);
      }
    });
}

describe('the log written whole before the process ends, stdout a full pipe', () => {
  for (const mode of ['graceful', 'signal'] as const) {
    const by =
      mode === 'graceful'
        ? "Kit's graceful shutdown (exit 0)"
        : 'the audit flush of a signal nothing else handles';
    it(`${ROUNDS} rounds of SIGTERM through ${by}: every line whole, none lost`, async () => {
      for (let r = 0; r < ROUNDS; r++) {
        const ended = await round(mode);
        const entries = parse(ended.stdout);
        const filler = entries.filter((e) => e.msg === 'filler').map((e) => e.line);
        assert.deepEqual(
          filler,
          Array.from({ length: LINES }, (_, i) => i),
          `round ${r}: every filler line, in order`,
        );
        if (mode === 'graceful') {
          assert.equal(ended.code, 0, `round ${r}: exit code (stderr: ${ended.stderr})`);
          assert.ok(
            entries.some((e) => e.msg === 'Kit: exiting with 0'),
            `round ${r}: the last line Kit says is written`,
          );
        } else {
          assert.equal(
            ended.signal,
            'SIGTERM',
            `round ${r}: ended by the signal (stderr: ${ended.stderr})`,
          );
          assert.ok(
            entries.some(
              (e) =>
                typeof e.msg === 'string' &&
                e.msg.startsWith('Kit audit trail: SIGTERM and no handler'),
            ),
            `round ${r}: Kit's flush line is written`,
          );
        }
      }
    });
  }

  // Whoever sends a second signal wants the process gone: it ends within Kit's 1 s bound for that
  // case, and never writes over the line in flight. What the pipe did not take by then is lost
  // (on a loaded machine the reader is slow and sonic-boom retries every 100 ms), but every line
  // written is whole and none is skipped.
  it(`${ROUNDS} rounds of a second SIGTERM during the graceful exit's flush: exit 143 within the bound, every line written whole, in order, none skipped`, async (t) => {
    for (let r = 0; r < ROUNDS; r++) {
      const ended = await round('graceful', true);
      const entries = parse(ended.stdout);
      const filler = entries.filter((e) => e.msg === 'filler').map((e) => e.line);
      assert.deepEqual(
        filler,
        Array.from({ length: filler.length }, (_, i) => i),
        `round ${r}: the filler lines written are the first ${filler.length}, in order`,
      );
      t.diagnostic(
        `round ${r}: ${filler.length} of ${LINES} filler lines written, ended ${ended.afterSecondMs} ms after the second signal`,
      );
      assert.equal(
        ended.code,
        143,
        `round ${r}: exit code 128 + SIGTERM (stderr: ${ended.stderr})`,
      );
      assert.ok(
        (ended.afterSecondMs ?? Infinity) < 1000 + 2000,
        `round ${r}: ended ${ended.afterSecondMs} ms after the second signal`,
      );
    }
  });

  it(`${ROUNDS} rounds of a second SIGTERM during the flush of a signal nothing handles: killed by it at once`, async () => {
    for (let r = 0; r < ROUNDS; r++) {
      const ended = await round('signal', true);
      assert.equal(
        ended.signal,
        'SIGTERM',
        `round ${r}: ended by the signal (stderr: ${ended.stderr})`,
      );
      assert.ok(
        (ended.afterSecondMs ?? Infinity) < READ_AFTER_MS + 2000,
        `round ${r}: ended ${ended.afterSecondMs} ms after the second signal`,
      );
    }
  });
});
