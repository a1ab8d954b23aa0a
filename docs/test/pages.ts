// The markdown pages the docs tests read: docs/*.md and the pages of docs/<topic>/ folders
// (docs/autocrud/*.md), not docs/test; and the other pages a reader meets (READMEs, ARCHITECTURE.md).
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

export function docsPages(): string[] {
  const docs = path.join(root, 'docs');
  return readdirSync(docs, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((e) => {
      if (e.isFile() && e.name.endsWith('.md')) return [`docs/${e.name}`];
      if (!e.isDirectory() || e.name === 'test') return [];
      return readdirSync(path.join(docs, e.name))
        .filter((f) => f.endsWith('.md'))
        .sort()
        .map((f) => `docs/${e.name}/${f}`);
    });
}

/** Every page whose links the link check follows. */
export function linkedPages(): string[] {
  const pages = ['README.md', 'ARCHITECTURE.md', 'CHANGELOG.md', ...docsPages()];
  for (const dir of ['packages', 'examples']) {
    for (const pkg of readdirSync(path.join(root, dir)).sort()) {
      if (existsSync(path.join(root, dir, pkg, 'README.md'))) pages.push(`${dir}/${pkg}/README.md`);
    }
  }
  return pages.filter((p) => existsSync(path.join(root, p)));
}
