// What a `pglite:<dir>` path must be before PGlite is started on it, checked by Kit so that a bad
// path fails start-up with a sentence naming it (PGlite itself throws `{ name: 'ErrnoError',
// errno: 54 }` for a regular file, printed as `[object Object]`, and writes a new database into any
// directory it is given, the project's own included).
import { accessSync, constants, mkdirSync, readdirSync, statSync } from 'node:fs';
import { KitError } from '@kit/core';
import { LOCK_FILE, lockDirectory, type DirectoryLock } from './directory-lock.js';

const REASONS: Readonly<Record<string, string>> = {
  ENOTDIR: 'a part of the path is a file, not a directory',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
  ELOOP: 'too many symbolic links',
  ENAMETOOLONG: 'the path is too long',
};

function unusable(target: string, what: string, cause?: unknown): KitError {
  return new KitError(
    'KIT_ERR_AUTOCRUD_ENGINE',
    `PGlite cannot use ${target}: ${what}.`,
    cause === undefined ? undefined : { cause },
  );
}

function reasonOf(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code ?? '';
  return REASONS[code] ?? (err as Error).message;
}

/**
 * Makes `directory` ready for PGlite and takes its lock: creates it when missing, refuses a
 * regular file, a path that cannot be created or written, and a non-empty directory that holds no
 * PostgreSQL database. Throws `KIT_ERR_AUTOCRUD_ENGINE` or `KIT_ERR_AUTOCRUD_LOCKED` naming `target`.
 */
export function claimDirectory(directory: string, target: string): DirectoryLock {
  let stat;
  try {
    stat = statSync(directory, { throwIfNoEntry: false });
  } catch (err) {
    throw unusable(target, reasonOf(err), err);
  }
  if (stat && !stat.isDirectory()) {
    throw unusable(
      target,
      `${directory} is a ${stat.isFile() ? 'regular file' : 'special file'}, not a directory. PGlite keeps its database in a directory (created when missing): name one`,
    );
  }
  if (!stat) {
    try {
      mkdirSync(directory, { recursive: true });
    } catch (err) {
      throw unusable(
        target,
        `the directory ${directory} cannot be created (${reasonOf(err)})`,
        err,
      );
    }
  }
  try {
    accessSync(directory, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (err) {
    throw unusable(target, `the directory ${directory} cannot be written (${reasonOf(err)})`, err);
  }
  // Locked before its content is read: another process may be writing a new database into it.
  const lock = lockDirectory(directory, target);
  try {
    const entries = readdirSync(directory);
    const foreign = entries.filter(
      (name) => name !== LOCK_FILE && name !== 'lost+found' && !name.startsWith('.'),
    );
    if (!entries.includes('PG_VERSION') && foreign.length > 0) {
      throw unusable(
        target,
        `${directory} is not empty (${foreign.slice(0, 3).join(', ')}${foreign.length > 3 ? ', …' : ''}) and holds no PostgreSQL database (no PG_VERSION): PGlite would write a new one among these files. Name a new or empty directory, or one PGlite created`,
      );
    }
  } catch (err) {
    lock.release();
    throw err instanceof KitError ? err : unusable(target, reasonOf(err), err);
  }
  return lock;
}
