#!/usr/bin/env node
// `prepack` of every publishable package (run in the package's folder): copies the repository's
// docs/*.md, and the pages of docs/<topic>/ folders (docs/autocrud/*.md; not docs/test), into the
// package's docs/, so the guides its README links to are in the tarball and a reader of an
// installed package finds them beside the README (node_modules/@kit/<name>/docs/).
// The repository has no public address yet (docs/decisions.md, "Packages and names"), so linking
// to it would lead nowhere. `postpack` runs it with --clean: the copy is not kept in the worktree.
import { cpSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const source = fileURLToPath(new URL('../docs/', import.meta.url));
const target = path.resolve('docs');
rmSync(target, { recursive: true, force: true });
if (!process.argv.includes('--clean')) {
  mkdirSync(target);
  for (const entry of readdirSync(source, { withFileTypes: true })) {
    if (entry.isFile() && entry.name.endsWith('.md'))
      cpSync(path.join(source, entry.name), path.join(target, entry.name));
    if (entry.isDirectory() && entry.name !== 'test') {
      const pages = readdirSync(path.join(source, entry.name)).filter((n) => n.endsWith('.md'));
      if (pages.length > 0) mkdirSync(path.join(target, entry.name));
      for (const name of pages)
        cpSync(path.join(source, entry.name, name), path.join(target, entry.name, name));
    }
  }
}
