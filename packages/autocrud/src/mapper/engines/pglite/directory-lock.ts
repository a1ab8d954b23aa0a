// One process per PGlite directory. PGlite is PostgreSQL in one process with no locking of its
// own: two processes (or two instances in one process) on one directory both start, both
// acknowledge writes, and leave a directory that no longer opens. Kit takes a lock file in the
// directory before PGlite touches it, in the manner of PostgreSQL's postmaster.pid: created with
// O_EXCL, naming the process that holds it, removed on close and on exit; a lock whose process is
// gone (killed, crashed, rebooted) is taken over. See docs/decisions.md ("The PGlite directory lock").
import { randomUUID } from 'node:crypto';
import {
  readFileSync,
  readlinkSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KitError } from '@kit/core';
import { onProcessExit } from '@kit/core/extend';

/** The lock file's name, inside the directory it guards. */
export const LOCK_FILE = 'kit-autocrud.lock';

/** How often a holder touches its lock, and how old a lock of another machine or container may be before it counts as abandoned. */
const HEARTBEAT_MS = 5_000;
const ABANDONED_AFTER_MS = 30_000;
/** A lock file with no readable content yet is another process writing it, unless older than this. */
const BEING_WRITTEN_MS = 5_000;

/** Who holds a lock, as written in the file. */
interface LockHolder {
  readonly pid: number;
  readonly host: string;
  /** Linux: the kernel's boot id and the pid namespace, which tell whether `pid` means a process of this machine and container. */
  readonly bootId?: string;
  readonly pidNamespace?: string;
  /** Linux: the process's start time in clock ticks since boot, which tells a reused pid from the holder. */
  readonly started?: string;
  readonly since: string;
  readonly token: string;
}

/** A held lock. */
export interface DirectoryLock {
  readonly file: string;
  /** Removes the lock file if it is still this holder's; idempotent. */
  release(): void;
}

function read(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** The start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat), where there is a /proc. */
function startedOf(pid: number | 'self'): string | undefined {
  const stat = read(`/proc/${pid}/stat`);
  // The command name (field 2) is in parentheses and may hold spaces or parentheses itself.
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

let self: Omit<LockHolder, 'since' | 'token'> | undefined;
function me(): Omit<LockHolder, 'since' | 'token'> {
  if (!self) {
    let pidNamespace: string | undefined;
    try {
      pidNamespace = readlinkSync('/proc/self/ns/pid');
    } catch {
      pidNamespace = undefined;
    }
    self = {
      pid: process.pid,
      host: os.hostname(),
      bootId: read('/proc/sys/kernel/random/boot_id')?.trim(),
      pidNamespace,
      started: startedOf('self'),
    };
  }
  return self;
}

/** The locks this process holds, by file: a second instance in this process is refused as surely as another process. */
const held = new Map<string, { token: string; heartbeat: NodeJS.Timeout }>();
let exitHook = false;

function parse(text: string | undefined): LockHolder | undefined {
  try {
    const value = JSON.parse(text ?? '') as Partial<LockHolder>;
    return typeof value.pid === 'number' &&
      typeof value.token === 'string' &&
      typeof value.host === 'string'
      ? (value as LockHolder)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `holder`'s pid names a process here: the same machine and pid namespace (Linux), or the same host name where there is no /proc. */
function samePids(holder: LockHolder): boolean {
  const mine = me();
  return mine.bootId !== undefined && holder.bootId !== undefined
    ? holder.bootId === mine.bootId && holder.pidNamespace === mine.pidNamespace
    : holder.host === mine.host;
}

/** Whether the process that wrote `holder` is still running; `ageMs` is how long ago the lock was last touched. */
function alive(holder: LockHolder, ageMs: number): boolean {
  const mine = me();
  if (samePids(holder)) {
    // Not one of this process's locks (those are in `held`), so an earlier process that had this pid.
    if (holder.pid === process.pid) return false;
    try {
      process.kill(holder.pid, 0);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    }
    // The pid runs, but it may be another process that was given the same pid since.
    const started = holder.started === undefined ? undefined : startedOf(holder.pid);
    return started === undefined || started === holder.started;
  }
  // This host rebooted since: nothing of before runs.
  if (
    holder.host === mine.host &&
    holder.bootId !== undefined &&
    mine.bootId !== undefined &&
    holder.bootId !== mine.bootId
  )
    return false;
  // Another machine or container: its pids mean nothing here; its heartbeat says whether it runs.
  return ageMs < ABANDONED_AFTER_MS;
}

function lockedError(
  target: string,
  file: string,
  holder: LockHolder | undefined,
  ageMs: number,
): KitError {
  const rule = 'PGlite runs in one process per directory: a second one would corrupt it.';
  if (holder && held.get(file)?.token === holder.token) {
    return new KitError(
      'KIT_ERR_AUTOCRUD_LOCKED',
      `${target} is already open in this process (pid ${process.pid}), by another addKitAutoCrud or an app not closed yet. ${rule} Close the other app first, or give this one another directory.`,
    );
  }
  const who = holder
    ? `process ${holder.pid} on host ${holder.host} (since ${holder.since})`
    : 'a process that is just starting';
  const abandoned =
    holder && !samePids(holder)
      ? ` A lock of another machine or container is taken over after ${ABANDONED_AFTER_MS / 1000} s without its heartbeat (last ${Math.round(ageMs / 1000)} s ago).`
      : '';
  return new KitError(
    'KIT_ERR_AUTOCRUD_LOCKED',
    `${target} is in use by ${who}. ${rule} Stop that process, or give this one another directory. The lock is ${file}; a lock left by a process that died is taken over by the next start.${abandoned}`,
  );
}

/** Removes the abandoned lock whose content was `seen`, unless another process changed it meanwhile. */
function takeOver(file: string, seen: string): void {
  // One process at a time decides: two that both saw the dead holder must not both delete (the
  // second would delete the first one's new lock).
  const guard = `${file}.takeover`;
  try {
    writeFileSync(guard, String(process.pid), { flag: 'wx' });
  } catch {
    // Another process is taking over; a guard it left by dying is old.
    try {
      if (Date.now() - statSync(guard).mtimeMs > BEING_WRITTEN_MS) unlinkSync(guard);
    } catch {
      // gone already
    }
    return;
  }
  try {
    if (read(file) === seen) unlinkSync(file);
  } finally {
    unlinkSync(guard);
  }
}

function releaseAll(): void {
  for (const file of [...held.keys()]) release(file);
}

function release(file: string): void {
  const mine = held.get(file);
  if (!mine) return;
  held.delete(file);
  clearInterval(mine.heartbeat);
  try {
    if (parse(read(file))?.token === mine.token) unlinkSync(file);
  } catch {
    // removed by someone else: nothing to release
  }
}

/**
 * Takes the lock of `directory` (which must exist) for this process, or throws
 * `KIT_ERR_AUTOCRUD_LOCKED` naming `target` and the process that holds it. `target` is how
 * messages name the database (`pglite:/srv/data`).
 */
export function lockDirectory(directory: string, target: string): DirectoryLock {
  const file = path.join(directory, LOCK_FILE);
  const token = randomUUID();
  const content = JSON.stringify({
    ...me(),
    since: new Date().toISOString(),
    token,
  } satisfies LockHolder);
  for (let attempt = 0; attempt < 5; attempt++) {
    if (held.has(file)) throw lockedError(target, file, parse(read(file)), 0);
    try {
      writeFileSync(file, content, { flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new KitError(
          'KIT_ERR_AUTOCRUD_ENGINE',
          `${target}: cannot create the lock file ${file} (${(err as Error).message}); PGlite needs a directory it can write.`,
          { cause: err },
        );
      }
      const seen = read(file);
      if (seen === undefined) continue;
      const modified = statSync(file, { throwIfNoEntry: false })?.mtimeMs;
      if (modified === undefined) continue;
      const ageMs = Date.now() - modified;
      const holder = parse(seen);
      const abandoned = holder ? !alive(holder, ageMs) : ageMs > BEING_WRITTEN_MS;
      if (!abandoned) throw lockedError(target, file, holder, ageMs);
      takeOver(file, seen);
      continue;
    }
    // Another machine or container sees this process's pid as meaningless: the heartbeat tells it the lock is live.
    const heartbeat = setInterval(() => {
      const now = new Date();
      try {
        utimesSync(file, now, now);
      } catch {
        // the directory went away; the engine reports that on its next query
      }
    }, HEARTBEAT_MS).unref();
    held.set(file, { token, heartbeat });
    if (!exitHook) {
      exitHook = true;
      // A process that exits without closing its app (process.exit) leaves no lock behind. A
      // killed one cannot: the next start sees its pid gone.
      onProcessExit(releaseAll);
    }
    return { file, release: () => release(file) };
  }
  throw new KitError(
    'KIT_ERR_AUTOCRUD_LOCKED',
    `${target}: could not take the lock ${file}: other processes keep taking it over at the same time. Start one process per directory.`,
  );
}
