// HAProxy (Debian's haproxy 2.6) in front of the instances, health-checking `/healthz` the way a
// Kubernetes readiness probe does: every `interMs` (periodSeconds), `fall` failures in a row take
// a server out of rotation (failureThreshold), `rise` successes put it back (successThreshold),
// a check that takes longer than `timeoutMs` fails (timeoutSeconds). Two frontends share the
// servers: `http` (HAProxy terminates HTTP and balances each request, as an ingress controller
// does) and `tcp` (each client connection is spliced to one server, as a Kubernetes Service's
// kube-proxy does). `retries 0`: a request HAProxy cannot deliver fails, as it does through a
// Service; HAProxy's own retries would hide a mistake for a second or three.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const haproxyBin = findHaproxy();

function findHaproxy(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).concat(['/usr/sbin', '/usr/bin'])) {
    const file = path.join(dir, 'haproxy');
    if (dir && spawnSync(file, ['-v']).status === 0) return file;
  }
  return undefined;
}

const inCi = process.env.CI === 'true';
/** The skip reason outside CI when haproxy is missing; in CI a missing haproxy fails the suite. */
export const skipHaproxy: string | false = !haproxyBin && !inCi ? 'haproxy not installed (apt-get install haproxy)' : false;

/** The balancer's health-check settings, in a Kubernetes readiness probe's terms. */
export interface ProbeSettings {
  /** `inter` (readinessProbe.periodSeconds). */
  readonly intervalMs: number;
  /** `fall` (readinessProbe.failureThreshold). */
  readonly fall: number;
  /** `rise` (readinessProbe.successThreshold). */
  readonly rise: number;
  /** `timeout check` (readinessProbe.timeoutSeconds). */
  readonly timeoutMs: number;
}

export type Frontend = 'http' | 'tcp';
export const FRONTENDS: readonly Frontend[] = ['http', 'tcp'];

/** One server state change as HAProxy logged it, in ms since the run's origin. */
export interface StateChange {
  readonly frontend: Frontend;
  readonly server: string;
  readonly up: boolean;
  readonly at: number;
  readonly line: string;
}

export interface HaproxyOptions {
  readonly ports: Readonly<Record<Frontend, number>>;
  /** Server name -> port. */
  readonly servers: Readonly<Record<string, number>>;
  readonly probe: ProbeSettings;
  readonly origin: number;
}

export function haproxyConfig(options: HaproxyOptions): string {
  const { probe } = options;
  const servers = Object.entries(options.servers).map(([name, port]) => `  server ${name} 127.0.0.1:${port}`);
  const backend = (mode: Frontend) => [
    `backend sample_${mode}`,
    `  mode ${mode}`,
    '  balance roundrobin',
    '  option httpchk GET /healthz',
    '  http-check expect status 200',
    `  default-server check inter ${probe.intervalMs}ms fall ${probe.fall} rise ${probe.rise}`,
    ...servers,
  ];
  return [
    'global',
    '  log stdout format raw local0 notice',
    '  maxconn 4096',
    'defaults',
    '  log global',
    '  timeout connect 2s',
    '  timeout client 60s',
    '  timeout server 60s',
    '  timeout http-keep-alive 60s',
    `  timeout check ${probe.timeoutMs}ms`,
    '  retries 0',
    'frontend http',
    '  mode http',
    `  bind 127.0.0.1:${options.ports.http}`,
    '  default_backend sample_http',
    'frontend tcp',
    '  mode tcp',
    `  bind 127.0.0.1:${options.ports.tcp}`,
    '  default_backend sample_tcp',
    ...backend('http'),
    ...backend('tcp'),
    '',
  ].join('\n');
}

// "Server sample_http/s1 is DOWN, reason: ..." / "Server sample_tcp/s2 is UP, reason: ..."
const STATE_LINE = /Server sample_(http|tcp)\/(\S+) is (UP|DOWN)/;

export class Haproxy {
  readonly changes: StateChange[] = [];
  readonly #child: ChildProcess;
  readonly #dir: string;
  readonly #origin: number;
  #output = '';
  #waiters: Array<() => void> = [];
  readonly #closed: Promise<number | null>;

  constructor(readonly options: HaproxyOptions) {
    if (!haproxyBin) throw new Error('haproxy not installed: with CI=true the rolling-deploy test fails instead of skipping (apt-get install haproxy).');
    this.#origin = options.origin;
    this.#dir = mkdtempSync(path.join(tmpdir(), 'kit-haproxy-'));
    const file = path.join(this.#dir, 'haproxy.cfg');
    writeFileSync(file, haproxyConfig(options));
    this.#child = spawn(haproxyBin, ['-f', file, '-db'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let buffered = '';
    const read = (chunk: string) => {
      this.#output = (this.#output + chunk).slice(-8000);
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) !== -1) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        const m = STATE_LINE.exec(line);
        // HAProxy writes each change twice with -db (the log on stdout, a warning on stderr): keep stdout's.
        if (m && !line.startsWith('[')) {
          this.changes.push({ frontend: m[1] as Frontend, server: m[2]!, up: m[3] === 'UP', at: Math.round(performance.now() - this.#origin), line });
          for (const w of this.#waiters.splice(0)) w();
        }
      }
    };
    this.#child.stdout!.setEncoding('utf8').on('data', read);
    this.#child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.#output = (this.#output + chunk).slice(-8000)));
    this.#closed = new Promise((resolve) => this.#child.on('close', resolve));
  }

  /** Whether HAProxy has `server` in rotation on `frontend` (servers start UP, as HAProxy assumes). */
  isUp(frontend: Frontend, server: string, since = -Infinity): boolean {
    const last = this.changes.filter((c) => c.frontend === frontend && c.server === server && c.at >= since).at(-1);
    return last === undefined ? since === -Infinity : last.up;
  }

  /** Resolves at the first change of `server` to `up` on every frontend after `since`. */
  async waitFor(server: string, up: boolean, since: number, timeoutMs: number): Promise<void> {
    const done = () => FRONTENDS.every((f) => this.changes.some((c) => c.frontend === f && c.server === server && c.up === up && c.at >= since));
    const deadline = performance.now() + timeoutMs;
    while (!done()) {
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`HAProxy did not mark ${server} ${up ? 'UP' : 'DOWN'} within ${timeoutMs} ms:\n${this.#output}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill('SIGTERM');
    await this.#closed;
    rmSync(this.#dir, { recursive: true, force: true });
  }

  get output(): string {
    return this.#output;
  }
}
