// HAProxy (Debian's haproxy 2.6) in front of the instances, health-checking `/healthz` the way a
// Kubernetes readiness probe does: every `interMs` (periodSeconds), `fall` failures in a row take
// a server out of rotation (failureThreshold), `rise` successes put it back (successThreshold),
// a check that takes longer than `timeoutMs` fails (timeoutSeconds). Two frontends share the
// servers: `http` (HAProxy terminates HTTP and balances each request, as an ingress controller
// does) and `tcp` (each client connection is spliced to one server, as a Kubernetes Service's
// kube-proxy does). `retries 0`: a request HAProxy cannot deliver fails, as it does through a
// Service; HAProxy's own retries would hide a mistake for a second or three.
//
// Whether a server is in rotation is read from HAProxy itself (`show stat` on its stats socket),
// not inferred from its log: HAProxy logs a change of state only, and a server whose checks
// failed fewer than `fall` times in a row (a replacement back within interval x fall) never went
// DOWN, so no UP follows; it simply stayed in rotation.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { skipWithout, throwMissing } from './binaries.ts';
import { until } from './until.ts';

export const haproxyBin = findHaproxy();

function findHaproxy(): string | undefined {
  for (const dir of (process.env.PATH ?? '')
    .split(path.delimiter)
    .concat(['/usr/sbin', '/usr/bin'])) {
    const file = path.join(dir, 'haproxy');
    if (dir && spawnSync(file, ['-v']).status === 0) return file;
  }
  return undefined;
}

/** The skip reason outside CI when haproxy is missing; in CI a missing haproxy fails the suite. */
export const skipHaproxy: string | false = skipWithout(
  haproxyBin,
  'haproxy not installed (apt-get install haproxy)',
);

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

/** One change of a server's state as HAProxy logged it (when it happened), in ms since the run's origin. */
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

/** A server's state in one backend, as `show stat` reports it. */
export interface ServerState {
  readonly frontend: Frontend;
  readonly server: string;
  /**
   * HAProxy's status: `UP` (in rotation, its last check passed), `UP 2/3` (in rotation, on its way
   * down: one check failed of the three `fall` allows), `DOWN`, `DOWN 1/2` (on its way up), ...
   */
  readonly status: string;
  /** The last check's result: `L7OK`, `L7STS` (wrong status), `L4CON` (connection refused), ... */
  readonly checkStatus: string;
  /** Failed checks since HAProxy started. */
  readonly failedChecks: number;
}

export function haproxyConfig(options: HaproxyOptions, statsSocket?: string): string {
  const { probe } = options;
  const servers = Object.entries(options.servers).map(
    ([name, port]) => `  server ${name} 127.0.0.1:${port}`,
  );
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
    ...(statsSocket ? [`  stats socket ${statsSocket} mode 600 level user`] : []),
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
  readonly #socket: string;
  readonly #origin: number;
  #output = '';
  readonly #closed: Promise<number | null>;

  constructor(readonly options: HaproxyOptions) {
    if (!haproxyBin) throwMissing('haproxy not installed', 'HAProxy', 'apt-get install haproxy');
    this.#origin = options.origin;
    this.#dir = mkdtempSync(path.join(tmpdir(), 'kit-haproxy-'));
    const file = path.join(this.#dir, 'haproxy.cfg');
    this.#socket = path.join(this.#dir, 'stats.sock');
    writeFileSync(file, haproxyConfig(options, this.#socket));
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
          this.changes.push({
            frontend: m[1] as Frontend,
            server: m[2]!,
            up: m[3] === 'UP',
            at: Math.round(performance.now() - this.#origin),
            line,
          });
        }
      }
    };
    this.#child.stdout!.setEncoding('utf8').on('data', read);
    this.#child
      .stderr!.setEncoding('utf8')
      .on('data', (chunk: string) => (this.#output = (this.#output + chunk).slice(-8000)));
    this.#closed = new Promise((resolve) => this.#child.on('close', resolve));
  }

  /** Every server of every backend, as HAProxy sees it now. */
  async state(): Promise<ServerState[]> {
    const [header, ...rows] = (await this.#ask('show stat'))
      .split('\n')
      .filter((line) => line !== '');
    // "# pxname,svname,...": the columns used here come before any free-text one, so a plain split does.
    const columns = (header ?? '').replace(/^# /, '').split(',');
    const at = (name: string) => columns.indexOf(name);
    const out: ServerState[] = [];
    for (const row of rows) {
      const f = row.split(',');
      const backend = /^sample_(http|tcp)$/.exec(f[at('pxname')] ?? '');
      const server = f[at('svname')] ?? '';
      if (!backend || server === 'BACKEND' || server === 'FRONTEND') continue;
      out.push({
        frontend: backend[1] as Frontend,
        server,
        status: f[at('status')] ?? '',
        checkStatus: f[at('check_status')] ?? '',
        failedChecks: Number(f[at('chkfail')] ?? 0),
      });
    }
    return out;
  }

  /**
   * Resolves, with the moment (ms since the run's origin), once HAProxy has `server` in rotation
   * with its last check passed (`UP`) on every frontend. Wait for the instance behind it to be
   * ready first: from then on every check passes, so `UP` means the balancer sends it requests
   * and they are served, whether or not its checks failed `fall` times while it was replaced.
   */
  async waitInRotation(server: string, timeoutMs: number): Promise<number> {
    let last: ServerState[] | string = [];
    await until(
      `${server} in rotation on every frontend`,
      async () => {
        try {
          const states = (last = (await this.state()).filter((s) => s.server === server));
          return FRONTENDS.every((f) => states.some((s) => s.frontend === f && s.status === 'UP'));
        } catch (err) {
          last = String(err); // the socket is not there yet: HAProxy is starting
          return false;
        }
      },
      { timeoutMs, intervalMs: Math.min(100, this.options.probe.intervalMs / 4) },
    ).catch((err: unknown) => {
      throw new Error(
        `HAProxy did not have ${server} in rotation on every frontend within ${timeoutMs} ms: ${JSON.stringify(last)}\n${this.#output}`,
        { cause: err },
      );
    });
    return Math.round(performance.now() - this.#origin);
  }

  /** One command on the stats socket (non-interactive: HAProxy answers and closes). */
  #ask(command: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(this.#socket);
      let answer = '';
      socket.setEncoding('utf8');
      socket.setTimeout(5000, () =>
        socket.destroy(new Error(`HAProxy's stats socket did not answer "${command}" within 5 s`)),
      );
      socket.on('data', (chunk: string) => (answer += chunk));
      socket.on('end', () => resolve(answer));
      socket.on('error', reject);
      socket.write(`${command}\n`);
    });
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode === null && this.#child.signalCode === null)
      this.#child.kill('SIGTERM');
    await this.#closed;
    rmSync(this.#dir, { recursive: true, force: true });
  }

  get output(): string {
    return this.#output;
  }
}
