// A pino destination that keeps every line the app logged, for the tests that check what the
// stores said about a failure (and that they said nothing secret).
import { Writable } from 'node:stream';

/** The stream to log to, and the lines written to it so far (as text, one chunk a line). */
export function logSink(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, callback) {
      lines.push(chunk.toString());
      callback();
    },
  });
  return { lines, stream };
}
