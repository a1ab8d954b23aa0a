// @test-lines: once - compares the catalogue with the docs page, text against text
// One error catalogue per package (scripts/error-tables.ts names them): every code a package's
// sources throw is declared in its catalogue, a code whose message the catalogue holds is not
// spelt out where it is thrown, every code the docs name exists, and the docs' error tables are
// exactly what the catalogues generate. A code added inline without its catalogue entry, or a
// catalogue entry without its table row, fails here.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { CATALOGUES, renderTable, tableInPage } from '../../scripts/error-tables.ts';
import { docsPages } from './pages.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** Codes that are not KitErrors: the publish guard's (scripts/check-publish.mjs). */
const NOT_KIT_ERRORS = new Set(['KIT_ERR_PUBLISH_UNSETTLED']);
const CODE = /KIT_ERR_[A-Z0-9_]*[A-Z0-9]/g;

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) sources(full, out);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

/** `KIT_ERR_DATABASE_…` or `KIT_ERR_DATABASE_*` names a family of codes, not a code. */
function family(text: string, m: RegExpMatchArray): boolean {
  const after = text.slice((m.index ?? 0) + m[0].length, (m.index ?? 0) + m[0].length + 2);
  return after === '_…' || after === '_*';
}

const packageOf = (source: string): string => source.split('/').slice(0, 2).join('/');
const allCodes = new Set(CATALOGUES.flatMap((c) => Object.keys(c.codes)));

describe('the error catalogues', () => {
  it('every package has one, and every code a package throws is in its own', () => {
    const packages = readdirSync(path.join(root, 'packages')).map((p) => `packages/${p}`);
    assert.deepEqual(
      CATALOGUES.map((c) => packageOf(c.source)).sort(),
      packages.sort(),
      'one catalogue per package (scripts/error-tables.ts)',
    );
    const missing: string[] = [];
    for (const c of CATALOGUES) {
      for (const file of sources(path.join(root, packageOf(c.source), 'src'))) {
        const text = readFileSync(file, 'utf8');
        for (const m of text.matchAll(CODE)) {
          const code = m[0];
          if (family(text, m)) continue;
          if (!(code in c.codes))
            missing.push(
              `${path.relative(root, file)}: ${code} is not in ${c.name}'s catalogue (${c.source})`,
            );
        }
      }
    }
    assert.deepEqual([...new Set(missing)], []);
  });

  it('a code whose message the catalogue holds is thrown through it, not spelt out again', () => {
    const inline: string[] = [];
    for (const c of CATALOGUES) {
      const templated = new Set(
        Object.entries(c.codes)
          .filter(([, spec]) => spec.message !== undefined)
          .map(([code]) => code),
      );
      for (const file of sources(path.join(root, packageOf(c.source), 'src'))) {
        const text = readFileSync(file, 'utf8');
        // new KitError('CODE', ...) or super('CODE', <anything but the catalogue's message>)
        for (const m of text.matchAll(
          /new KitError\(\s*'(KIT_ERR_\w+)'|super\(\s*'(KIT_ERR_\w+)',(?!\s*\w+Errors\.message\()/g,
        )) {
          const code = (m[1] ?? m[2]) as string;
          if (templated.has(code))
            inline.push(
              `${path.relative(root, file)}: ${code} has a message in ${c.source}; throw it with ${c.source.includes('core') ? 'coreErrors' : 'its catalogue'}.error(...)`,
            );
        }
      }
    }
    assert.deepEqual(inline, []);
  });

  it('a code two catalogues declare has one status', () => {
    const status = new Map<string, number | undefined>();
    const differing: string[] = [];
    for (const c of CATALOGUES) {
      for (const [code, spec] of Object.entries(c.codes)) {
        if (status.has(code) && status.get(code) !== spec.status)
          differing.push(`${code}: ${status.get(code)} and ${spec.status} (${c.name})`);
        status.set(code, spec.status);
      }
    }
    assert.deepEqual(differing, []);
  });

  it("the docs' error tables are the catalogues' (npm run docs:errors writes them)", () => {
    for (const c of CATALOGUES) {
      const page = readFileSync(path.join(root, c.page), 'utf8');
      const table = tableInPage(page, c.name);
      assert.ok(table, `${c.page} holds the error table of ${c.name}`);
      assert.equal(
        table,
        renderTable(c.name, c.source, c.codes),
        `${c.page}: the table differs from ${c.source}; run npm run docs:errors`,
      );
    }
  });

  it('every code the docs and READMEs name exists', () => {
    const pages = [
      'README.md',
      ...['ARCHITECTURE.md'].filter((f) => existsSync(path.join(root, f))),
      ...docsPages(),
      ...readdirSync(path.join(root, 'packages')).map((p) => `packages/${p}/README.md`),
    ];
    const unknown: string[] = [];
    for (const page of pages) {
      const text = readFileSync(path.join(root, page), 'utf8');
      for (const m of text.matchAll(CODE)) {
        const code = m[0];
        if (family(text, m)) continue;
        if (!allCodes.has(code) && !NOT_KIT_ERRORS.has(code)) unknown.push(`${page}: ${code}`);
      }
    }
    assert.deepEqual([...new Set(unknown)], []);
  });
});
