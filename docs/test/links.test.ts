// @test-lines: once - reads the pages and their links
// Every relative link of the docs pages, the READMEs, ARCHITECTURE.md and the CHANGELOG leads to a
// file that exists, and every `#anchor` to a heading (or an `<a id>`) of the page it names, so a
// page split or a renamed heading cannot leave a reader at a dead end. Links inside code blocks
// are examples, not links, and are not followed.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { linkedPages } from './pages.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** A heading's anchor as GitHub writes it: lower case, punctuation dropped, spaces to `-`. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]+>/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The page's lines outside code fences. */
function prose(text: string): string[] {
  let fence = false;
  return text.split('\n').map((line) => {
    if (/^```/.test(line)) {
      fence = !fence;
      return '';
    }
    return fence ? '' : line;
  });
}

function anchors(file: string): Set<string> {
  const text = readFileSync(file, 'utf8');
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(text)) {
    const h = /^#{1,6} (.*)$/.exec(line);
    if (!h) continue;
    const base = slug(h[1] as string);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a (?:id|name)="([^"]+)"/g)) out.add(m[1] as string);
  return out;
}

describe('documentation links', () => {
  const pages = linkedPages();

  it('the pages it reads include the AutoCrud pages and ARCHITECTURE.md', () => {
    assert.ok(pages.includes('docs/autocrud.md'));
    assert.ok(
      pages.some((p) => p.startsWith('docs/autocrud/')),
      'docs/autocrud/*.md are read',
    );
    assert.ok(pages.includes('ARCHITECTURE.md'), 'ARCHITECTURE.md is read');
  });

  it('every relative link leads to a file, and every anchor to a heading of its page', () => {
    const cache = new Map<string, Set<string>>();
    const broken: string[] = [];
    for (const page of pages) {
      const lines = prose(readFileSync(path.join(root, page), 'utf8'));
      lines.forEach((line, i) => {
        // Inline code is not a link: `[x](y)` between backticks is an example.
        const text = line.replace(/`[^`]*`/g, '``');
        for (const m of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
          const target = m[1] as string;
          if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
          const [file = '', anchor] = target.split('#');
          // A package's README links docs/… as its tarball holds them: the copy of the repository's docs/ (scripts/pack-docs.mjs).
          const base =
            /^packages\/[^/]+\/README\.md$/.test(page) && file.startsWith('docs/')
              ? root
              : path.dirname(path.join(root, page));
          const resolved =
            file === '' ? path.join(root, page) : path.resolve(base, decodeURIComponent(file));
          const where = `${page}:${i + 1}: ${target}`;
          if (!existsSync(resolved)) {
            broken.push(`${where} (no file)`);
            continue;
          }
          if (
            anchor === undefined ||
            anchor === '' ||
            statSync(resolved).isDirectory() ||
            !resolved.endsWith('.md')
          )
            continue;
          if (!cache.has(resolved)) cache.set(resolved, anchors(resolved));
          if (!cache.get(resolved)!.has(anchor)) broken.push(`${where} (no heading #${anchor})`);
        }
      });
    }
    assert.deepEqual(broken, []);
  });

  it('every docs page over 150 lines opens with a table of contents', () => {
    const missing = pages
      .filter((p) => p.startsWith('docs/') || p === 'README.md' || p === 'ARCHITECTURE.md')
      .filter((p) => readFileSync(path.join(root, p), 'utf8').split('\n').length > 150)
      // A page of one section (no ## or ### headings below its title) has nothing to list.
      .filter(
        (p) =>
          prose(readFileSync(path.join(root, p), 'utf8')).filter((l) => /^#{2,3} /.test(l)).length >
          1,
      )
      .filter(
        (p) =>
          !/^\*\*Contents\*\*$/m.test(
            readFileSync(path.join(root, p), 'utf8').split('\n').slice(0, 40).join('\n'),
          ),
      );
    assert.deepEqual(
      missing,
      [],
      'open the page with a **Contents** list of its sections (within its first 40 lines)',
    );
  });
});
