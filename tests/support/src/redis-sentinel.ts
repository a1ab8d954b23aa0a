// A real Sentinel setup for the tests: a master, a replica and three Sentinels (quorum 2), all
// redis-server processes on free loopback ports (`redis-server sentinel.conf --sentinel`; Debian's
// `redis-sentinel` package only adds a service for the same binary). The Sentinels are told up
// front about the replica and each other (`known-replica`, `known-sentinel`), so a failover can
// start at once instead of after the ten seconds of discovery.
import { randomBytes } from 'node:crypto';
import { ask } from './redis-cluster.ts';
import { freePort } from './ports.ts';
import { RedisServer } from './redis.ts';
import { until } from './until.ts';

export interface SentinelGroupOptions {
  /** The master group's name (default `kitmaster`). */
  name?: string;
  /** `down-after-milliseconds`: how long until an unanswering master is subjectively down. */
  downAfterMs?: number;
}

export class RedisSentinelGroup {
  private constructor(
    readonly name: string,
    readonly master: RedisServer,
    readonly replica: RedisServer,
    readonly sentinels: readonly RedisServer[],
  ) {}

  static async start(options: SentinelGroupOptions = {}): Promise<RedisSentinelGroup> {
    const name = options.name ?? 'kitmaster';
    const master = await RedisServer.start();
    const replica = await RedisServer.start({
      extraArgs: ['--replicaof', '127.0.0.1', String(master.port)],
    });
    const members: RedisServer[] = [master, replica];
    try {
      await until(
        'the replica in sync',
        async () => ((await ask(replica.port, 'ROLE')) as string[])[3] === 'connected',
        { timeoutMs: 10_000, retryErrors: true },
      );
      const peers = await Promise.all(
        [0, 1, 2].map(async () => ({
          port: await freePort(),
          id: randomBytes(20).toString('hex'),
        })),
      );
      const config = (self: { id: string }) =>
        [
          `sentinel myid ${self.id}`,
          `sentinel monitor ${name} 127.0.0.1 ${master.port} 2`,
          `sentinel down-after-milliseconds ${name} ${options.downAfterMs ?? 500}`,
          `sentinel failover-timeout ${name} 5000`,
          `sentinel known-replica ${name} 127.0.0.1 ${replica.port}`,
          ...peers
            .filter((p) => p !== self)
            .map((p) => `sentinel known-sentinel ${name} 127.0.0.1 ${p.port} ${p.id}`),
          '',
        ].join('\n');
      const sentinels = await Promise.all(
        peers.map((p) => RedisServer.start({ port: p.port, sentinelConfig: config(p) })),
      );
      members.push(...sentinels);
      const group = new RedisSentinelGroup(name, master, replica, sentinels);
      await until(
        'every Sentinel knows the master, its replica and the other Sentinels',
        async () => {
          const views = await Promise.all(
            sentinels.map(async (s) => (await ask(s.port, 'SENTINEL', 'MASTER', name)) as string[]),
          );
          return views.every(
            (v) =>
              v[v.indexOf('num-slaves') + 1] === '1' &&
              v[v.indexOf('num-other-sentinels') + 1] === '2' &&
              v[v.indexOf('flags') + 1] === 'master',
          );
        },
        { timeoutMs: 20_000, retryErrors: true },
      );
      return group;
    } catch (err) {
      await Promise.all(members.map((m) => m.dispose()));
      throw err;
    }
  }

  /** `redis://name`: the store URL of the master group. */
  get url(): string {
    return `redis://${this.name}`;
  }

  get sentinelUrls(): string[] {
    return this.sentinels.map((s) => s.url);
  }

  /** The port of the master the Sentinels announce now. */
  async masterPort(): Promise<number> {
    const [, port] = (await ask(
      this.sentinels[0]!.port,
      'SENTINEL',
      'GET-MASTER-ADDR-BY-NAME',
      this.name,
    )) as [string, string];
    return Number(port);
  }

  async dispose(): Promise<void> {
    await Promise.all([this.master, this.replica, ...this.sentinels].map((s) => s.dispose()));
  }
}
