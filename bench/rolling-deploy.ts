// A rolling deploy of the sample behind HAProxy under load, with more load and time than the test
// (examples/sample-api/test/rolling-deploy.test.ts) gives it. Starts its own PostgreSQL and Redis.
//
//   node --conditions=kit-source --import tsx bench/rolling-deploy.ts [--rate 600] [--connections 24]
//     [--rounds 3] [--instances 3] [--delay 5000|default] [--inter 1000] [--fall 2] [--rise 1]
//     [--timeout 3000] [--settle 5000]
//
// `--delay 1000 --fall 3` shows the mistake: the instance stops listening before the balancer
// has taken it out of rotation.
import { parseArgs } from 'node:util';
import { PostgresServer } from '@kit/test-support/postgres';
import { RedisServer } from '@kit/test-support/redis';
import {
  formatReport,
  runRollingDeploy,
} from '../examples/sample-api/test/fleet/rolling-deploy.ts';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '600' },
    connections: { type: 'string', default: '24' },
    rounds: { type: 'string', default: '3' },
    instances: { type: 'string', default: '3' },
    delay: { type: 'string', default: 'default' },
    inter: { type: 'string', default: '1000' },
    fall: { type: 'string', default: '2' },
    rise: { type: 'string', default: '1' },
    timeout: { type: 'string', default: '3000' },
    settle: { type: 'string', default: '5000' },
  },
});

const [database, redis] = await Promise.all([PostgresServer.start(), RedisServer.start()]);
try {
  const report = await runRollingDeploy({
    databaseUrl: database.url,
    redisUrl: redis.url,
    probe: {
      intervalMs: Number(values.inter),
      fall: Number(values.fall),
      rise: Number(values.rise),
      timeoutMs: Number(values.timeout),
    },
    shutdownDelayMs: values.delay === 'default' ? undefined : Number(values.delay),
    instances: Number(values.instances),
    rate: Number(values.rate),
    connections: Number(values.connections),
    rounds: Number(values.rounds),
    settleMs: Number(values.settle),
    log: (line) => console.log(line),
  });
  for (const line of formatReport(report)) console.log(line);
  process.exitCode =
    report.failures === 0 &&
    report.missingWrites === 0 &&
    report.audit.missing === 0 &&
    report.audit.duplicated === 0
      ? 0
      : 1;
} finally {
  await Promise.all([database.dispose(), redis.dispose()]);
}
