// CPU per audit entry in the logging sink, without HTTP: how much the direct pino line and the
// batched destination write save. `node --conditions=kit-source --import tsx bench/audit-lines.ts`
// (or `npm run bench:lines`). Prints the median of 7 rounds of 200,000 entries for each way; the
// CPU time is the whole process's, so the destination's writes in libuv's threads count too.
import pino, { type DestinationStream } from 'pino';
import { LoggingAuditSink, type AuditLogEntry } from '@kit/core';

const N = 200_000;
const ROUNDS = 7;
const headers = { host: '127.0.0.1:3000', connection: 'keep-alive', 'user-agent': 'autocannon/8' };
const entries: AuditLogEntry[] = Array.from({ length: N }, (_, i) => ({
  timestamp: '2026-11-21T10:00:00.000Z',
  method: 'GET',
  path: '/api/hello',
  query: null,
  statusCode: 200,
  durationMs: 0.123 + i / 1e6,
  correlationId: '0d94da32-1111-2222-3333-444455556666',
  headers,
}));

// 100 entries per turn of the event loop, as a busy server completes them, so that an
// asynchronous destination gets to write between turns as it would there.
const turn = () => new Promise((r) => setImmediate(r));
type Way = (sink: LoggingAuditSink) => Promise<void>;
const oneByOne: Way = async (sink) => {
  for (let i = 0; i < N; i += 100) {
    for (let j = i; j < i + 100; j++) sink.write(entries[j] as AuditLogEntry);
    await turn();
  }
};
const inBatchesOf100: Way = async (sink) => {
  for (let i = 0; i < N; i += 100) {
    sink.writeMany(entries, i, i + 100);
    await turn();
  }
};

// 5 entries complete per turn, as on a server with a handful of connections. Synchronous mode
// writes each turn's lines at its end; asynchronous mode holds them and writes 100 at a time.
const fivePerTurnEachTurn: Way = async (sink) => {
  for (let i = 0; i < N; i += 5) {
    sink.writeMany(entries, i, i + 5);
    await turn();
  }
};
const fivePerTurnHeldTo100: Way = async (sink) => {
  for (let i = 0; i < N; i += 5) {
    if ((i + 5) % 100 === 0) sink.writeMany(entries, i - 95, i + 5);
    await turn();
  }
};

// An identity `formatters.log` keeps the sink on pino's own `logger.info(fields, message)` call.
const pinoPath = { formatters: { log: (o: Record<string, unknown>) => o } };

const cases: Array<[string, () => DestinationStream, Record<string, unknown>, Way]> = [
  ['pino path, no-op destination, one by one', () => ({ write() {} }), pinoPath, oneByOne],
  ['direct lines, no-op destination, one by one', () => ({ write() {} }), {}, oneByOne],
  [
    'pino path, /dev/null (sonic-boom async), one by one',
    () => pino.destination({ dest: '/dev/null', sync: false }),
    pinoPath,
    oneByOne,
  ],
  [
    'direct lines, /dev/null (sonic-boom async), one by one',
    () => pino.destination({ dest: '/dev/null', sync: false }),
    {},
    oneByOne,
  ],
  [
    'direct lines, /dev/null (sonic-boom async), batches of 100',
    () => pino.destination({ dest: '/dev/null', sync: false }),
    {},
    inBatchesOf100,
  ],
  [
    'direct lines, /dev/null (sonic-boom async), 5 per turn, written each turn (synchronous mode)',
    () => pino.destination({ dest: '/dev/null', sync: false }),
    {},
    fivePerTurnEachTurn,
  ],
  [
    'direct lines, /dev/null (sonic-boom async), 5 per turn, held and written 100 at a time (asynchronous mode)',
    () => pino.destination({ dest: '/dev/null', sync: false }),
    {},
    fivePerTurnHeldTo100,
  ],
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const results: Record<string, number[]> = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, destination, options, way] of cases) {
    const sink = new LoggingAuditSink(pino({ level: 'info', ...options }, destination()));
    const before = process.cpuUsage();
    await way(sink);
    const used = process.cpuUsage(before);
    (results[name] ??= []).push((used.user + used.system) / N);
    // Let the destination write out what it holds before the next case.
    await new Promise((r) => setTimeout(r, 50));
  }
}
console.log(
  `Node ${process.version}, ${N.toLocaleString('en-US')} Default-format entries per round, median of ${ROUNDS} rounds:`,
);
for (const [name] of cases)
  console.log(
    `${median(results[name] ?? [])
      .toFixed(2)
      .padStart(6)} µs CPU per entry  ${name}`,
  );
