// A rolling deploy of the sample behind HAProxy, measured: N instances share one PostgreSQL and one
// Redis; steady keep-alive load runs through the balancer while each instance in turn is replaced
// the way an orchestrator replaces a pod (SIGTERM, wait for the exit, start the new one on the
// same address, wait until HAProxy's stats say it is in rotation on every frontend). The report
// says what the clients saw, whether every acknowledged write is in PostgreSQL, whether every
// completed request was audited exactly once, and how long each instance spent in each state.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort } from '@kit/test-support/ports';
import { FRONTENDS, Haproxy, type Frontend, type ProbeSettings } from '@kit/test-support/haproxy';
import { Instance, type InstanceCommand } from './instance.ts';
import { Load, type LoadCounts } from './load.ts';

export interface RollingDeployOptions {
  readonly databaseUrl: string;
  readonly redisUrl: string;
  /** The balancer's health checks. */
  readonly probe: ProbeSettings;
  /** SHUTDOWN_DELAY_MS of the instances; `undefined` keeps Kit's default (5000 ms in production). */
  readonly shutdownDelayMs?: number;
  readonly instances?: number;
  /** Requests per second through the balancer, both frontends together. */
  readonly rate?: number;
  /** Keep-alive connections per frontend. */
  readonly connections?: number;
  /** Load before the first replacement and after the last, in ms. */
  readonly settleMs?: number;
  /** How many times the whole fleet is replaced (1: each instance once). */
  readonly rounds?: number;
  readonly command?: InstanceCommand;
  /** Called with progress lines (the bench script prints them). */
  readonly log?: (line: string) => void;
}

export interface InstanceReport {
  readonly name: string;
  readonly slot: string;
  readonly exitCode: number | null | undefined;
  readonly auditEntries: number;
  /** ms: spawn -> Kit ready (readiness gate open). */
  readonly starting?: number;
  /** ms: Kit ready -> in rotation on every frontend. */
  readonly readyToInRotation?: number;
  /** ms: in rotation on every frontend -> SIGTERM. */
  readonly serving?: number;
  /**
   * ms per frontend: SIGTERM -> out of rotation (the balancer's checks failed `fall` times in a
   * row). `null`: the balancer never took it out before its replacement was in rotation (its
   * checks failed fewer than `fall` times in a row across the replacement).
   */
  readonly signalToOutOfRotation: Partial<Record<Frontend, number | null>>;
  /** ms: SIGTERM -> exit. */
  readonly signalToExit?: number;
}

export interface RollingDeployReport {
  readonly durationMs: number;
  readonly loadMs: number;
  readonly counts: LoadCounts;
  readonly byFrontend: Record<Frontend, LoadCounts>;
  readonly failures: number;
  /** Requests an instance answered (the balancer's own answers left out). */
  readonly completed: number;
  /** Answers the balancer wrote itself (503 when it has no server to send the request to). */
  readonly answeredByBalancer: number;
  readonly acknowledgedWrites: number;
  readonly missingWrites: number;
  /** Completed requests with no audit entry, with more than one, and audit entries of requests the client saw fail. */
  readonly audit: {
    readonly entries: number;
    readonly missing: number;
    readonly duplicated: number;
    readonly ofFailedRequests: number;
  };
  readonly instances: InstanceReport[];
  readonly settings: {
    readonly probe: ProbeSettings;
    readonly shutdownDelayMs: number | 'default';
    readonly rate: number;
    readonly connections: number;
  };
}

export async function runRollingDeploy(
  options: RollingDeployOptions,
): Promise<RollingDeployReport> {
  const origin = performance.now();
  const log = options.log ?? (() => undefined);
  const count = options.instances ?? 3;
  const rate = options.rate ?? 240;
  const connections = options.connections ?? 12;
  const settleMs = options.settleMs ?? 2000;
  const runId = `fleet-${randomUUID().slice(0, 8)}`;
  const env: Record<string, string> = {
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: options.redisUrl,
    CURSOR_SECRET: 'rolling-deploy-cursor-secret-of-32-chars',
    ...(options.shutdownDelayMs === undefined
      ? {}
      : { SHUTDOWN_DELAY_MS: String(options.shutdownDelayMs) }),
  };
  const slots = Array.from({ length: count }, (_, i) => `s${i + 1}`);
  const ports: Record<string, number> = {};
  for (const slot of slots) ports[slot] = await freePort();
  const all: Array<{ slot: string; instance: Instance }> = [];
  const current = new Map<string, Instance>();
  let generation = 0;
  const start = (slot: string): Instance => {
    const instance = new Instance({
      name: `${slot}.${generation}`,
      port: ports[slot]!,
      env,
      command: options.command,
      origin,
    });
    all.push({ slot, instance });
    current.set(slot, instance);
    return instance;
  };

  let haproxy: Haproxy | undefined;
  let load: Load | undefined;
  try {
    // The first instance creates the tables; the others start once they exist.
    await start(slots[0]!).ready(90_000);
    await Promise.all(slots.slice(1).map((slot) => start(slot).ready(90_000)));
    log(`${count} instances ready (${Math.round(performance.now() - origin)} ms)`);
    haproxy = new Haproxy({
      ports: { http: await freePort(), tcp: await freePort() },
      servers: ports,
      probe: options.probe,
      origin,
    });
    // HAProxy takes servers as UP until a check fails; two intervals let the first checks pass.
    await sleep(options.probe.intervalMs * 2);
    const down = haproxy.changes.filter((c) => !c.up);
    if (down.length > 0)
      throw new Error(
        `HAProxy marked a server down before the deploy: ${down.map((c) => c.line).join('\n')}`,
      );

    load = new Load({ ports: haproxy.options.ports, rate, connections, runId });
    load.start();
    await sleep(settleMs);
    for (let round = 1; round <= (options.rounds ?? 1); round++) {
      generation = round;
      for (const slot of slots) {
        const old = current.get(slot)!;
        const code = await old.terminate();
        log(
          `${old.name}: SIGTERM -> exit ${code} in ${(old.times.exited ?? 0) - (old.times.signalled ?? 0)} ms`,
        );
        const next = start(slot);
        await next.ready(90_000);
        next.times.inRotation = await haproxy.waitInRotation(slot, 30_000);
        log(
          `${next.name}: in rotation ${next.times.inRotation - next.times.spawned} ms after its start`,
        );
      }
    }
    await sleep(settleMs);
    await load.stop();
    // Every instance ends the way it would in production, so its audit queue is flushed.
    await Promise.all([...current.values()].map((instance) => instance.terminate()));
  } catch (err) {
    for (const { instance } of all) instance.kill();
    await load?.stop();
    await haproxy?.stop();
    throw err;
  }
  await haproxy.stop();

  // Every acknowledged write is in PostgreSQL.
  const client = new pg.Client({ connectionString: options.databaseUrl });
  await client.connect();
  let stored: Set<string>;
  try {
    const { rows } = await client.query<{ name: string }>(
      'select name from products where name like $1',
      [`${runId}-product-%`],
    );
    stored = new Set(rows.map((r) => r.name));
  } finally {
    await client.end();
  }
  const missingWrites = [...load.acknowledged].filter((name) => !stored.has(name)).length;

  // Every completed request audited exactly once, across all instances.
  const audited = new Map<string, number>();
  let entries = 0;
  for (const { instance } of all) {
    for (const [id, n] of instance.audited) {
      if (!id.startsWith(`${runId}-`)) continue;
      audited.set(id, (audited.get(id) ?? 0) + n);
      entries += n;
    }
  }
  let missing = 0;
  let duplicated = 0;
  for (const id of load.completed) {
    const n = audited.get(id) ?? 0;
    if (n === 0) missing += 1;
    else if (n > 1) duplicated += 1;
  }
  const ofFailedRequests = [...load.failed].filter((id) => audited.has(id)).length;

  const instances = all.map(({ slot, instance }, index): InstanceReport => {
    const t = instance.times;
    const inRotation = generationZero(instance) ? t.ready : t.inRotation;
    // Its replacement in the slot; a DOWN after that one is in rotation is not this instance's.
    const successor = all.slice(index + 1).find((x) => x.slot === slot)?.instance;
    const until = successor ? (successor.times.inRotation ?? Infinity) : Infinity;
    const out: Partial<Record<Frontend, number | null>> = {};
    if (t.signalled !== undefined) {
      for (const f of FRONTENDS) {
        const d = haproxy!.changes.find(
          (c) =>
            c.frontend === f && c.server === slot && !c.up && c.at >= t.signalled! && c.at <= until,
        );
        if (d) out[f] = d.at - t.signalled;
        else if (successor?.times.inRotation !== undefined) out[f] = null;
      }
    }
    return {
      name: instance.name,
      slot,
      exitCode: instance.exitCode,
      auditEntries: instance.auditEntries,
      starting: t.ready === undefined ? undefined : t.ready - t.spawned,
      readyToInRotation:
        inRotation === undefined || t.ready === undefined ? undefined : inRotation - t.ready,
      serving:
        inRotation === undefined || t.signalled === undefined
          ? undefined
          : t.signalled - inRotation,
      signalToOutOfRotation: out,
      signalToExit:
        t.signalled === undefined || t.exited === undefined ? undefined : t.exited - t.signalled,
    };
  });

  return {
    durationMs: Math.round(performance.now() - origin),
    loadMs: Math.round(load.stoppedAt - load.started),
    counts: load.total(),
    byFrontend: load.counts,
    failures: load.failures(),
    completed: load.completed.size,
    answeredByBalancer: load.byBalancer,
    acknowledgedWrites: load.acknowledged.size,
    missingWrites,
    audit: { entries, missing, duplicated, ofFailedRequests },
    instances,
    settings: {
      probe: options.probe,
      shutdownDelayMs: options.shutdownDelayMs ?? 'default',
      rate,
      connections,
    },
  };
}

// The first generation was in rotation before the balancer started (HAProxy assumes UP).
function generationZero(instance: Instance): boolean {
  return instance.name.endsWith('.0');
}

/** A SIGTERM -> out of rotation figure as the report prints it. */
export function outOfRotation(ms: number | null | undefined): string {
  return ms === null ? 'never' : String(ms ?? '-');
}

/** The report as a few readable lines (the test prints them as diagnostics, the script to stdout). */
export function formatReport(r: RollingDeployReport): string[] {
  const s = r.settings;
  const lines = [
    `settings: shutdownDelayMs ${s.shutdownDelayMs}, checks inter ${s.probe.intervalMs} ms fall ${s.probe.fall} rise ${s.probe.rise} timeout ${s.probe.timeoutMs} ms; load ${s.rate} req/s on ${s.connections} keep-alive connections per frontend`,
    `run ${r.durationMs} ms, load ${r.loadMs} ms: ${r.counts.sent} requests (${r.counts.reads} reads, ${r.counts.writes} writes), ${r.counts.ok} 2xx, ` +
      `${r.failures} failed (non-2xx ${r.counts.non2xx} ${JSON.stringify(r.counts.statuses)}, resets ${r.counts.reset}, refused ${r.counts.refused}, timeouts ${r.counts.timeout}, other ${r.counts.other})`,
    ...FRONTENDS.map((f) => {
      const c = r.byFrontend[f];
      return `  ${f} frontend: ${c.sent} requests, ${c.ok} 2xx, non-2xx ${c.non2xx}, resets ${c.reset}, refused ${c.refused}, timeouts ${c.timeout}, other ${c.other}`;
    }),
    `writes acknowledged ${r.acknowledgedWrites}, missing from PostgreSQL ${r.missingWrites}`,
    `audit: ${r.audit.entries} entries for ${r.completed} requests the instances answered (${r.answeredByBalancer} answered by HAProxy itself); missing ${r.audit.missing}, duplicated ${r.audit.duplicated}, entries of requests the client saw fail ${r.audit.ofFailedRequests}`,
    'instance  exit  audited  starting  ready->in rotation  serving  SIGTERM->out (http/tcp)  SIGTERM->exit   (ms)',
    ...r.instances.map((i) =>
      [
        i.name.padEnd(8),
        String(i.exitCode ?? '-').padStart(4),
        String(i.auditEntries).padStart(8),
        String(i.starting ?? '-').padStart(9),
        String(i.readyToInRotation ?? '-').padStart(19),
        String(i.serving ?? '-').padStart(8),
        FRONTENDS.map((f) => outOfRotation(i.signalToOutOfRotation[f]))
          .join('/')
          .padStart(24),
        String(i.signalToExit ?? '-').padStart(14),
      ].join(' '),
    ),
  ];
  for (const sample of r.counts.samples.slice(0, 6)) lines.push(`  e.g. ${sample}`);
  return lines;
}
