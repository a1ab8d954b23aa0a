// Runs a Dockerfile's build steps as a script, for machines where no image can be built: each stage
// is a fresh directory standing for the image's root, FROM starts it empty (the base image's Node
// is the one running this), WORKDIR/COPY/RUN/ENV/ARG act on that directory, COPY reads the build
// context through the .dockerignore rules, and the last stage's CMD, USER, WORKDIR and ENV are
// returned so that a test can start the result. An instruction this runner does not know fails
// the run: the Dockerfile cannot use something its test does not exercise.
import { execFile } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Instruction {
  readonly keyword: string;
  readonly args: string;
  readonly line: number;
}

/** The Dockerfile's instructions, continuation lines joined, comments and blank lines dropped. */
export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i]!;
    if (/^\s*(#|$)/.test(line)) continue;
    while (line.endsWith('\\') && i + 1 < lines.length)
      line = line.slice(0, -1) + ' ' + lines[++i]!.trim();
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!m) throw new Error(`Dockerfile line ${start + 1}: cannot read ${JSON.stringify(line)}`);
    out.push({ keyword: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start + 1 });
  }
  return out;
}

/** A matcher for .dockerignore patterns (`**`, `*`, a leading `/` ignored), on paths relative to the context. */
export function ignoreMatcher(text: string): (relative: string) => boolean {
  const rules = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((p) => {
      if (p.startsWith('!'))
        throw new Error(`.dockerignore exceptions (${p}) are not supported by this runner`);
      const body = p
        .replace(/^\/+/, '')
        .replace(/\/+$/, '')
        .split('/')
        .map((seg) =>
          seg === '**'
            ? '(?:.*/)?'
            : seg
                .replace(/[.+^${}()|[\]\\]/g, '\\$&')
                .replace(/\*/g, '[^/]*')
                .replace(/\?/g, '[^/]') + '/',
        )
        .join('');
      return new RegExp(`^${body.replace(/\/$/, '')}(?:/.*)?$`);
    });
  return (relative) => rules.some((r) => r.test(relative));
}

export interface BuiltImage {
  /** Directory of each stage's root, by stage name (or index). */
  readonly stages: Readonly<Record<string, string>>;
  /** The last stage's root, WORKDIR (inside the root), CMD, USER and ENV. */
  readonly root: string;
  readonly workdir: string;
  readonly cmd: readonly string[];
  readonly user: string | undefined;
  readonly env: Readonly<Record<string, string>>;
  readonly stopSignal: string | undefined;
  readonly exposed: readonly string[];
  /** Each RUN step with how long it took, for the report. */
  readonly steps: ReadonlyArray<{ stage: string; command: string; ms: number }>;
}

interface Stage {
  name: string;
  root: string;
  workdir: string;
  env: Record<string, string>;
  cmd: string[];
  user: string | undefined;
  stopSignal: string | undefined;
  exposed: string[];
}

function substitute(text: string, vars: Readonly<Record<string, string>>): string {
  return text.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (whole, a: string | undefined, b: string | undefined) => vars[(a ?? b)!] ?? whole,
  );
}

function assignments(args: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g))
    out.push([m[1]!, m[2]!.replace(/^"|"$/g, '')]);
  return out;
}

/** Copies `from` to `to` as COPY does: a directory's contents, skipping what `ignored` says (context copies only). */
function copyTree(
  from: string,
  to: string,
  ignored: ((absolute: string) => boolean) | undefined,
): void {
  if (ignored?.(from)) return;
  const stat = lstatSync(from);
  if (stat.isDirectory()) {
    mkdirSync(to, { recursive: true });
    for (const name of readdirSync(from))
      copyTree(path.join(from, name), path.join(to, name), ignored);
    return;
  }
  mkdirSync(path.dirname(to), { recursive: true });
  // A link is copied as the link (npm's workspace links, node_modules/.bin), as COPY does.
  if (stat.isSymbolicLink()) symlinkSync(readlinkSync(from), to);
  else copyFileSync(from, to);
}

/**
 * Runs `dockerfile`'s stages in `workspace` (a fresh directory) with `context` as the build
 * context. `env` is added to every RUN (npm's cache settings, for instance).
 */
export async function buildFromDockerfile(options: {
  dockerfile: string;
  context: string;
  workspace: string;
  env?: Record<string, string>;
}): Promise<BuiltImage> {
  const text = readFileSync(options.dockerfile, 'utf8');
  const ignoreFile = `${options.dockerfile}.dockerignore`;
  const contextIgnore = existsSync(ignoreFile)
    ? readFileSync(ignoreFile, 'utf8')
    : existsSync(path.join(options.context, '.dockerignore'))
      ? readFileSync(path.join(options.context, '.dockerignore'), 'utf8')
      : '';
  const matches = ignoreMatcher(contextIgnore);
  const ignored = (absolute: string) => {
    const relative = path.relative(options.context, absolute).split(path.sep).join('/');
    return relative !== '' && matches(relative);
  };
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  const steps: Array<{ stage: string; command: string; ms: number }> = [];
  let stage: Stage | undefined;
  const inStage = (instruction: Instruction): Stage => {
    if (!stage)
      throw new Error(`Dockerfile line ${instruction.line}: ${instruction.keyword} before FROM`);
    return stage;
  };
  const inside = (s: Stage, target: string): string =>
    path.join(s.root, path.posix.isAbsolute(target) ? target : path.posix.join(s.workdir, target));

  for (const instruction of parseDockerfile(text)) {
    const vars = { ...args, ...(stage?.env ?? {}) };
    switch (instruction.keyword) {
      case 'ARG':
        for (const [k, v] of assignments(instruction.args)) args[k] = v;
        break;
      case 'FROM': {
        const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(substitute(instruction.args, args));
        if (!m) throw new Error(`Dockerfile line ${instruction.line}: FROM ${instruction.args}`);
        const name = m[2] ?? String(stages.length);
        const root = path.join(options.workspace, `stage-${stages.length}-${name}`);
        mkdirSync(root, { recursive: true });
        stage = {
          name,
          root,
          workdir: '/',
          env: {},
          cmd: [],
          user: undefined,
          stopSignal: undefined,
          exposed: [],
        };
        stages.push(stage);
        break;
      }
      case 'WORKDIR': {
        const s = inStage(instruction);
        s.workdir = path.posix.resolve(s.workdir, substitute(instruction.args, vars));
        mkdirSync(path.join(s.root, s.workdir), { recursive: true });
        break;
      }
      case 'ENV':
        for (const [k, v] of assignments(instruction.args)) inStage(instruction).env[k] = v;
        break;
      case 'COPY': {
        const s = inStage(instruction);
        const parts = substitute(instruction.args, vars).split(/\s+/);
        let from: string | undefined;
        while (parts[0]?.startsWith('--')) {
          const flag = parts.shift()!;
          if (flag.startsWith('--from=')) from = flag.slice(7);
          else if (!flag.startsWith('--chown=') && !flag.startsWith('--chmod='))
            throw new Error(
              `Dockerfile line ${instruction.line}: COPY ${flag} is not supported by this runner`,
            );
        }
        const dest = parts.pop()!;
        const source = from === undefined ? undefined : stages.find((x) => x.name === from);
        if (from !== undefined && !source)
          throw new Error(`Dockerfile line ${instruction.line}: no stage ${from}`);
        for (const src of parts) {
          const absolute = source
            ? path.join(source.root, path.posix.resolve('/', src))
            : path.join(options.context, src);
          if (!existsSync(absolute))
            throw new Error(
              `Dockerfile line ${instruction.line}: COPY source ${src} does not exist`,
            );
          const target = inside(s, dest);
          const intoDir =
            dest.endsWith('/') || parts.length > 1 || statSync(absolute).isDirectory();
          copyTree(
            absolute,
            intoDir && !statSync(absolute).isDirectory()
              ? path.join(target, path.basename(absolute))
              : target,
            source ? undefined : ignored,
          );
        }
        break;
      }
      case 'RUN': {
        const s = inStage(instruction);
        const command = substitute(instruction.args, vars);
        const started = performance.now();
        try {
          await run('sh', ['-c', command], {
            cwd: path.join(s.root, s.workdir),
            env: {
              ...process.env,
              PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}`,
              ...args,
              ...s.env,
              ...options.env,
            },
            timeout: 600_000,
            maxBuffer: 64 * 1024 * 1024,
          });
        } catch (err) {
          const e = err as { stdout?: string; stderr?: string; message: string };
          throw new Error(
            `Dockerfile line ${instruction.line} (stage ${s.name}): RUN ${command} failed: ${e.message}\n${(e.stdout ?? '').slice(-2000)}\n${(e.stderr ?? '').slice(-4000)}`,
            { cause: err },
          );
        }
        steps.push({ stage: s.name, command, ms: Math.round(performance.now() - started) });
        break;
      }
      case 'CMD': {
        const cmd = JSON.parse(instruction.args) as unknown;
        if (!Array.isArray(cmd) || !cmd.every((c) => typeof c === 'string'))
          throw new Error(`Dockerfile line ${instruction.line}: CMD must be in exec (JSON) form`);
        inStage(instruction).cmd = cmd;
        break;
      }
      case 'USER':
        inStage(instruction).user = instruction.args;
        break;
      case 'EXPOSE':
        inStage(instruction).exposed.push(...instruction.args.split(/\s+/));
        break;
      case 'STOPSIGNAL':
        inStage(instruction).stopSignal = instruction.args;
        break;
      case 'LABEL':
        break;
      default:
        throw new Error(
          `Dockerfile line ${instruction.line}: ${instruction.keyword} is not supported by this runner`,
        );
    }
  }
  const last = stages.at(-1);
  if (!last) throw new Error('the Dockerfile has no FROM');
  return {
    stages: Object.fromEntries(stages.map((s) => [s.name, s.root])),
    root: last.root,
    workdir: last.workdir,
    cmd: last.cmd,
    user: last.user,
    env: last.env,
    stopSignal: last.stopSignal,
    exposed: last.exposed,
    steps,
  };
}
