// A real Redis Cluster for the tests, built from Debian's redis-server by hand (no redis-cli):
// nodes with `cluster-enabled yes` on free loopback ports, slots split evenly over the masters
// (CLUSTER ADDSLOTSRANGE), one CLUSTER MEET per node, then CLUSTER REPLICATE for the replicas.
// Start-up waits until every node reports cluster_state:ok and every replica is in sync.
import { Redis } from 'ioredis';
import { RedisServer } from './redis.ts';
import { until } from './until.ts';

const SLOTS = 16384;

/** One `command` on a short-lived connection to `port`. */
export async function ask(
  port: number,
  ...args: [string, ...Array<string | number>]
): Promise<unknown> {
  const client = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(...args);
  } finally {
    client.disconnect();
  }
}

function field(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
}

export interface RedisClusterOptions {
  masters?: number;
  replicasPerMaster?: number;
  /** `cluster-node-timeout`: how long until an unreachable node is failed over. */
  nodeTimeoutMs?: number;
}

/** A slot range and the node serving it. */
export interface Shard {
  readonly from: number;
  readonly to: number;
  readonly master: RedisServer;
  readonly replicas: RedisServer[];
}

export class RedisCluster {
  private constructor(readonly shards: readonly Shard[]) {}

  static async start(options: RedisClusterOptions = {}): Promise<RedisCluster> {
    const masterCount = options.masters ?? 3;
    const replicasPer = options.replicasPerMaster ?? 0;
    const cluster = { nodeTimeoutMs: options.nodeTimeoutMs ?? 5000 };
    const servers = await Promise.all(
      Array.from({ length: masterCount * (1 + replicasPer) }, () => RedisServer.start({ cluster })),
    );
    const shards: Shard[] = Array.from({ length: masterCount }, (_, i) => ({
      from: Math.floor((i * SLOTS) / masterCount),
      to: Math.floor(((i + 1) * SLOTS) / masterCount) - 1,
      master: servers[i]!,
      replicas: servers.slice(masterCount + i * replicasPer, masterCount + (i + 1) * replicasPer),
    }));
    const self = new RedisCluster(shards);
    try {
      // Distinct config epochs up front, as redis-cli does, so no collision has to be resolved later.
      await Promise.all(
        shards.map(async (shard, i) => {
          await ask(shard.master.port, 'CLUSTER', 'SET-CONFIG-EPOCH', i + 1);
          await ask(shard.master.port, 'CLUSTER', 'ADDSLOTSRANGE', shard.from, shard.to);
        }),
      );
      // Every node meets every other directly: the cluster converges in a few handshakes instead
      // of waiting for gossip to spread the news.
      await Promise.all(
        servers.map(async (from, i) => {
          for (const to of servers.slice(i + 1))
            await ask(from.port, 'CLUSTER', 'MEET', '127.0.0.1', to.port, to.busPort!);
        }),
      );
      await until(
        'every node knows every other',
        async () =>
          (
            await Promise.all(
              servers.map(async (s) =>
                field(String(await ask(s.port, 'CLUSTER', 'INFO')), 'cluster_known_nodes'),
              ),
            )
          ).every((n) => n === String(servers.length)),
        { timeoutMs: 20_000, retryErrors: true },
      );
      for (const shard of shards) {
        const id = String(await ask(shard.master.port, 'CLUSTER', 'MYID'));
        for (const replica of shard.replicas) {
          // cluster_known_nodes counts nodes still in handshake (under a temporary id): wait for the real one.
          await until(
            'the replica knows its master',
            async () => String(await ask(replica.port, 'CLUSTER', 'NODES')).includes(id),
            { timeoutMs: 20_000, retryErrors: true },
          );
          await ask(replica.port, 'CLUSTER', 'REPLICATE', id);
        }
      }
      await self.waitUntilHealthy(20_000);
      return self;
    } catch (err) {
      await self.dispose();
      throw err;
    }
  }

  get nodes(): RedisServer[] {
    return this.shards.flatMap((s) => [s.master, ...s.replicas]);
  }

  /** Seed URLs for the client: every master. */
  get urls(): string[] {
    return this.shards.map((s) => s.master.url);
  }

  /** Every running node says cluster_state:ok; every running replica is in sync with its master and known as a replica to every node. */
  async waitUntilHealthy(limitMs: number): Promise<number> {
    const { ms } = await until(
      'a healthy cluster',
      async () => {
        const running = this.nodes.filter((n) => n.running);
        const infos = await Promise.all(
          running.map(async (n) => String(await ask(n.port, 'CLUSTER', 'INFO'))),
        );
        if (!infos.every((info) => field(info, 'cluster_state') === 'ok')) return false;
        // ROLE of a replica: ['slave', masterHost, masterPort, 'connected' | 'sync' | ..., offset].
        const roles = (await Promise.all(running.map((n) => ask(n.port, 'ROLE')))) as string[][];
        const replicas = roles.filter((r) => r[0] === 'slave');
        if (!replicas.every((r) => r[3] === 'connected')) return false;
        const views = await Promise.all(
          running.map(async (n) => String(await ask(n.port, 'CLUSTER', 'NODES'))),
        );
        const knownReplicas = (view: string) =>
          view
            .split('\n')
            .filter((line) => /\bslave\b/.test(line.split(' ')[2] ?? '') && !/fail/.test(line))
            .length;
        return views.every((view) => knownReplicas(view) === replicas.length);
      },
      { timeoutMs: limitMs, retryErrors: true },
    );
    return ms;
  }

  /** The shard serving `slot` now (after a failover, its former replica may be the master). */
  async masterPortOf(slot: number): Promise<number> {
    const running = this.nodes.find((n) => n.running)!;
    const slots = (await ask(running.port, 'CLUSTER', 'SLOTS')) as Array<
      [number, number, [string, number, ...unknown[]], ...unknown[]]
    >;
    const range = slots.find(([from, to]) => slot >= from && slot <= to);
    if (!range) throw new Error(`no node serves slot ${slot}`);
    return Number(range[2][1]);
  }

  async dispose(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.dispose()));
  }
}
