// One instance of the sample service as a real child process (what a pod runs), with its stdout
// kept: the audit entries it wrote (pino JSON lines carrying `CorrelationId`) and the moments of
// its life, timed by the parent as the lines arrive.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { typescriptArgs } from '@kit/test-support/node-args';

const SAMPLE = fileURLToPath(new URL('../../', import.meta.url));

/** What the instance runs: the sample from source (tsx), or a built entry such as `dist/main.js`. */
export interface InstanceCommand {
  readonly args: readonly string[];
  readonly cwd: string;
}

/** The sample from source, as `npm start` runs it. */
export const FROM_SOURCE: InstanceCommand = {
  args: [...typescriptArgs, path.join(SAMPLE, 'src', 'main.ts')],
  cwd: SAMPLE,
};

export interface InstanceOptions {
  readonly name: string;
  readonly port: number;
  /** Environment on top of the parent's (DATABASE_URL, REDIS_URL, SHUTDOWN_DELAY_MS, ...). */
  readonly env: Readonly<Record<string, string>>;
  readonly command?: InstanceCommand;
  /** Origin of the timestamps (performance.now() of the run's start). */
  readonly origin: number;
}

/** Moments in an instance's life, in ms since the run's origin. */
export interface InstanceTimes {
  spawned: number;
  listening?: number;
  ready?: number;
  /** The balancer has it in rotation on every frontend (the first generation: taken as `ready`). */
  inRotation?: number;
  signalled?: number;
  exited?: number;
}

export class Instance {
  readonly name: string;
  readonly port: number;
  readonly times: InstanceTimes;
  /** Correlation id -> audit entries the instance wrote with it. */
  readonly audited = new Map<string, number>();
  /** Audit entries the instance wrote (every correlation id). */
  auditEntries = 0;
  exitCode: number | null | undefined;
  readonly #child: ChildProcess;
  readonly #origin: number;
  readonly #closed: Promise<number | null>;
  #stderr = '';
  #waiters: Array<{ text: string; resolve: () => void }> = [];
  #lines: string[] = [];

  constructor(options: InstanceOptions) {
    this.name = options.name;
    this.port = options.port;
    this.#origin = options.origin;
    const command = options.command ?? FROM_SOURCE;
    this.#child = spawn(process.execPath, [...command.args], {
      cwd: command.cwd,
      env: {
        ...process.env,
        NODE_ENV: 'production',
        LOG_LEVEL: 'info',
        HOST: '127.0.0.1',
        PORT: String(options.port),
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.times = { spawned: this.#now() };
    let buffered = '';
    this.#child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) !== -1) {
        this.#line(buffered.slice(0, nl));
        buffered = buffered.slice(nl + 1);
      }
    });
    this.#child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.#stderr = (this.#stderr + chunk).slice(-8000);
    });
    this.#closed = new Promise((resolve) =>
      this.#child.on('close', (code) => {
        this.times.exited = this.#now();
        this.exitCode = code;
        resolve(code);
      }),
    );
  }

  #now(): number {
    return Math.round(performance.now() - this.#origin);
  }

  #line(line: string): void {
    if (line.includes('Sample shop API is listening')) this.times.listening ??= this.#now();
    if (line.includes('Kit start-up complete')) this.times.ready ??= this.#now();
    if (line.includes('"CorrelationId"')) {
      const id = (JSON.parse(line) as { CorrelationId?: unknown }).CorrelationId;
      if (typeof id === 'string') {
        this.auditEntries += 1;
        this.audited.set(id, (this.audited.get(id) ?? 0) + 1);
      }
    } else if (this.#lines.length < 400) {
      this.#lines.push(line);
    }
    for (const w of this.#waiters.filter((w) => line.includes(w.text))) w.resolve();
  }

  /** Resolves once Kit's start-up is complete (the readiness gate is open). */
  async ready(timeoutMs: number): Promise<void> {
    if (this.times.ready !== undefined) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new Error(`${this.name} was not ready within ${timeoutMs} ms:\n${this.output()}`)),
        timeoutMs,
      );
      this.#waiters.push({
        text: 'Kit start-up complete',
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
      void this.#closed.then((code) => {
        clearTimeout(timer);
        reject(new Error(`${this.name} exited (${code}) before it was ready:\n${this.output()}`));
      });
    });
  }

  /** SIGTERM, as the kubelet sends it; resolves with the exit code once every line is read. */
  async terminate(): Promise<number | null> {
    this.times.signalled = this.#now();
    this.#child.kill('SIGTERM');
    return this.#closed;
  }

  get closed(): Promise<number | null> {
    return this.#closed;
  }

  /** Ends the process at once (clean-up after a failed run). */
  kill(): void {
    if (this.#child.exitCode === null && this.#child.signalCode === null)
      this.#child.kill('SIGKILL');
  }

  /** Its non-audit lines and stderr, for failure messages. */
  output(): string {
    return `${this.#lines.slice(-30).join('\n')}\n${this.#stderr}`;
  }
}
