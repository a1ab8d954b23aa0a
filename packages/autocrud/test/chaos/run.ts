// The chaos run by hand, with as many rounds as you like:
//   node --conditions=kit-source --import tsx packages/autocrud/test/chaos/run.ts --rounds 10 [--modes terminate,restart-immediate] [--rps 300] [--connections 8] [--pool-size 10]
// Starts its own PostgreSQL (durable commits, so that a crash keeps every acknowledged write) and
// prints the per-mode table docs/autocrud.md quotes.
import { parseArgs } from 'node:util';
import { PostgresServer } from '@kit/test-support/postgres';
import { FAULT_MODES, formatReport, runChaos, type FaultMode } from './chaos.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    modes: { type: 'string', default: FAULT_MODES.join(',') },
    rps: { type: 'string', default: '300' },
    connections: { type: 'string', default: '8' },
    'pool-size': { type: 'string', default: '10' },
    'down-ms': { type: 'string', default: '1000' },
  },
});
const modes = (values.modes as string).split(',') as FaultMode[];
for (const mode of modes)
  if (!FAULT_MODES.includes(mode))
    throw new Error(`unknown mode ${mode}; one of ${FAULT_MODES.join(', ')}`);
const server = await PostgresServer.start({ durable: true });
try {
  const report = await runChaos(server, {
    rounds: Number(values.rounds),
    modes,
    rps: Number(values.rps),
    connections: Number(values.connections),
    downMs: Number(values['down-ms']),
    env: { POOL_SIZE: String(values['pool-size']) },
    log: (line) => console.error(line),
  });
  console.log(formatReport(report));
  process.exitCode =
    report.exited || report.missing.length > 0 || Object.keys(report.unexpected).length > 0 ? 1 : 0;
} finally {
  await server.dispose();
}
