// A PGlite on a new database (in memory, or a new or empty directory) starts by running initdb,
// seconds of WASM; loading the cluster initdb makes (a gzipped tarball) takes a fraction of that
// (docs/benchmarks.md has the figures). The first in-memory start of an
// installed PGlite version saves its fresh cluster next to the package
// (node_modules/.cache/kit-autocrud/); later starts, in memory or in a new directory, load it.
// The decision is in docs/decisions.md ("PGlite start-up").
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { PGlite, type PGliteOptions } from '@electric-sql/pglite';

const unzip = promisify(gunzip);

/** Where the fresh cluster of the installed PGlite is kept, or undefined when PGlite's install cannot be found. */
export async function snapshotFile(): Promise<string | undefined> {
  try {
    // …/node_modules/@electric-sql/pglite/dist/index.js
    const entry = fileURLToPath(import.meta.resolve('@electric-sql/pglite'));
    const packageDir = path.resolve(path.dirname(entry), '..');
    const { version } = JSON.parse(
      await readFile(path.join(packageDir, 'package.json'), 'utf8'),
    ) as { version: string };
    return path.join(
      packageDir,
      '..',
      '..',
      '.cache',
      'kit-autocrud',
      `pglite-${version}-initdb.tar.gz`,
    );
  } catch {
    return undefined;
  }
}

/**
 * The saved cluster as a tar archive, or undefined when there is none or it is damaged (then it is
 * removed, and the caller runs initdb and saves a new one). Unzipped here, not by PGlite: gzip's
 * checksum catches a truncated or altered file, which PGlite would fail on with an unhandled
 * rejection.
 */
async function readSnapshot(file: string): Promise<Uint8Array | undefined> {
  let zipped: Buffer;
  try {
    zipped = await readFile(file);
  } catch {
    return undefined;
  }
  try {
    return await unzip(zipped);
  } catch {
    await discardSnapshot(file);
    return undefined;
  }
}

/** Saves `archive` (a gzipped tar of a fresh cluster) atomically; a cache that cannot be written is skipped. */
async function writeSnapshot(file: string, archive: Uint8Array): Promise<boolean> {
  const partial = `${file}.${process.pid}.${Date.now()}.partial`;
  try {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(partial, archive);
    await rename(partial, file);
    return true;
  } catch {
    await rm(partial, { force: true }).catch(() => undefined);
    return false;
  }
}

/** Removes a saved cluster PGlite could not start from. */
async function discardSnapshot(file: string): Promise<void> {
  await rm(file, { force: true }).catch(() => undefined);
}

/**
 * An in-memory PGlite: from the saved fresh cluster when there is one, else from initdb, whose
 * cluster is then saved for the next start. `snapshot` says which (`none`: initdb, and the cache
 * could not be written). Used by the worker thread, and by the tests that open a PGlite of their own.
 */
export async function startInMemory(
  options: PGliteOptions,
): Promise<{ db: PGlite; snapshot: 'loaded' | 'saved' | 'none' }> {
  const file = await snapshotFile();
  const archive = file === undefined ? undefined : await readSnapshot(file);
  if (archive !== undefined) {
    try {
      const db = new PGlite({ ...options, loadDataDir: new Blob([archive]) });
      await db.waitReady;
      return { db, snapshot: 'loaded' };
    } catch {
      await discardSnapshot(file as string);
    }
  }
  const db = new PGlite(options);
  await db.waitReady;
  // Before any table exists: the tarball is initdb's cluster and nothing else.
  const saved =
    file !== undefined &&
    (await writeSnapshot(file, new Uint8Array(await (await db.dumpDataDir('gzip')).arrayBuffer())));
  return { db, snapshot: saved ? 'saved' : 'none' };
}

/**
 * A PGlite on `directory` (claimed by pglite-directory.ts: new, empty, or holding a database). A
 * directory without a database is filled from the saved fresh cluster when there is one, else
 * PGlite runs initdb in it; one with a database is opened. `snapshot` says which (`none`: opened,
 * or initdb). A load that fails removes what it wrote, and initdb runs instead (the archive passed
 * gzip's checksum, so the cause is more likely the directory, which initdb will then name).
 */
export async function startInDirectory(
  directory: string,
  options: PGliteOptions,
): Promise<{ db: PGlite; snapshot: 'loaded' | 'none' }> {
  if (!existsSync(path.join(directory, 'PG_VERSION'))) {
    const file = await snapshotFile();
    const archive = file === undefined ? undefined : await readSnapshot(file);
    if (archive !== undefined) {
      const before = new Set(readdirSync(directory));
      try {
        const db = new PGlite(directory, { ...options, loadDataDir: new Blob([archive]) });
        await db.waitReady;
        return { db, snapshot: 'loaded' };
      } catch {
        await Promise.all(
          readdirSync(directory)
            .filter((name) => !before.has(name))
            .map((name) => rm(path.join(directory, name), { recursive: true, force: true })),
        );
      }
    }
  }
  const db = new PGlite(directory, options);
  await db.waitReady;
  return { db, snapshot: 'none' };
}
