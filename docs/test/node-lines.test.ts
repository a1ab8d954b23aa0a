// @test-lines: once - reads the package.json files and the pages, text against text
// The Node lines Kit runs on are stated in three places that must say the same: each package's
// `engines` (npm prints EBADENGINE on a line outside it), the README's quick start and the table
// of docs/packages.md (and each package's README, which its tarball ships). Every package declares
// the root's range, and the pages name the lines that range admits, each from its first version.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';

const root = fileURLToPath(new URL('../../', import.meta.url));

interface Manifest {
  name: string;
  private?: boolean;
  engines?: { node?: string };
}

function manifest(dir: string): Manifest {
  return JSON.parse(readFileSync(path.join(root, dir, 'package.json'), 'utf8')) as Manifest;
}

type Version = readonly [number, number, number];

/** One alternative of a range: the first version it admits, and the major it stops below (`^`). */
interface Alternative {
  readonly from: Version;
  readonly below?: number;
}

/** The alternatives of an `engines.node` range written as `^X.Y.Z` and `>=X.Y.Z` joined by `||`. */
export function alternatives(range: string): Alternative[] {
  return range.split('||').map((part) => {
    const m = /^\s*(\^|>=)(\d+)\.(\d+)\.(\d+)\s*$/.exec(part);
    assert.ok(m, `engines range part ${JSON.stringify(part)} is neither ^X.Y.Z nor >=X.Y.Z`);
    const from: Version = [Number(m[2]), Number(m[3]), Number(m[4])];
    return m[1] === '^' && from[0] > 0 ? { from, below: from[0] + 1 } : { from };
  });
}

function compare(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/** The first version of Node line `major` the range admits, or undefined when it admits none. */
export function firstOfLine(range: string, major: number): Version | undefined {
  const firsts = alternatives(range)
    .filter((a) => a.from[0] <= major && (a.below === undefined || major < a.below))
    .map((a): Version => (a.from[0] === major ? a.from : [major, 0, 0]))
    .sort(compare);
  return firsts[0];
}

/** The lines of a page from `## heading` to the next `## `. */
function section(page: string, heading: string): string {
  const text = readFileSync(path.join(root, page), 'utf8');
  const start = text.indexOf(`\n## ${heading}\n`);
  assert.notEqual(start, -1, `${page} has a "## ${heading}" section`);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end === -1 ? undefined : end);
}

const rootRange = manifest('.').engines?.node ?? '';

describe('the Node lines the packages declare and the docs state', () => {
  it('the root declares a range of ^X.Y.Z / >=X.Y.Z alternatives', () => {
    assert.ok(rootRange, 'the root package.json declares engines.node');
    assert.ok(alternatives(rootRange).length > 0);
    assert.deepEqual(firstOfLine('^20.19.0 || >=22.12.0', 20), [20, 19, 0]);
    assert.deepEqual(firstOfLine('^20.19.0 || >=22.12.0', 22), [22, 12, 0]);
    assert.deepEqual(firstOfLine('^20.19.0 || >=22.12.0', 26), [26, 0, 0]);
    assert.equal(firstOfLine('^20.19.0 || >=22.12.0', 18), undefined);
    assert.equal(firstOfLine('>=22.12.0', 20), undefined);
  });

  it("every package declares the root's range", () => {
    const dirs = ['packages', 'examples', 'tests'].flatMap((parent) =>
      readdirSync(path.join(root, parent))
        .filter((d) => existsSync(path.join(root, parent, d, 'package.json')))
        .map((d) => `${parent}/${d}`),
    );
    const differ = dirs
      .map((dir) => ({ dir, m: manifest(dir) }))
      // A private workspace may leave engines to the root; a published package may not.
      .filter(({ m }) => !m.private || m.engines?.node !== undefined)
      .filter(({ m }) => m.engines?.node !== rootRange)
      .map(({ dir, m }) => `${dir}: ${m.engines?.node ?? '(none)'}`);
    assert.deepEqual(differ, [], `each must declare the root's "${rootRange}"`);
  });

  it("docs/packages.md's table lists the lines the range admits, each from its first version", () => {
    const text = section('docs/packages.md', 'Supported Node lines');
    const rows = [...text.matchAll(/^\| (\d+) \| ([^|]*) \|/gm)].map((m) => ({
      line: Number(m[1]),
      status: m[2] as string,
    }));
    assert.ok(rows.length > 0, 'the table has rows');
    for (const { line, status } of rows) {
      const first = firstOfLine(rootRange, line);
      assert.ok(first, `line ${line} is in the table, and "${rootRange}" does not admit it`);
      if (first[1] !== 0 || first[2] !== 0)
        assert.ok(
          status.includes(`from ${first.join('.')}`),
          `the row of Node ${line} says "from ${first.join('.')}": ${status}`,
        );
    }
    // Every even (release) line the range admits, from its lowest to the newest in the table.
    const lines = rows.map((r) => r.line);
    const lowest = Math.min(...alternatives(rootRange).map((a) => a.from[0]));
    for (let line = lowest; line <= Math.max(...lines); line += 2)
      if (firstOfLine(rootRange, line))
        assert.ok(lines.includes(line), `"${rootRange}" admits Node ${line}: the table lists it`);
    assert.ok(
      text.includes(`engines: { node: "${rootRange}" }`),
      'the section quotes the range the packages declare',
    );
  });

  it("each package's README names the lines the range admits, each from its first version", () => {
    for (const dir of readdirSync(path.join(root, 'packages')).sort()) {
      const file = path.join(root, 'packages', dir, 'README.md');
      if (!existsSync(file)) continue;
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/\bNode(?:\.js)? (\d+)\b/g))
        assert.ok(
          firstOfLine(rootRange, Number(m[1])),
          `packages/${dir}/README.md names Node ${m[1]}`,
        );
      for (const { from } of alternatives(rootRange)) {
        const first = firstOfLine(rootRange, from[0]) as Version;
        assert.ok(
          text.includes(`Node.js ${first[0]}.${first[1]} or`),
          `packages/${dir}/README.md says "Node.js ${first[0]}.${first[1]} or later"`,
        );
      }
      assert.ok(text.includes(rootRange), `packages/${dir}/README.md quotes "${rootRange}"`);
    }
  });

  it("the README's quick start names the same lines and the range", () => {
    const text = section('README.md', 'Quick start');
    for (const m of text.matchAll(/\bNode (\d+)(?:\.(\d+))?/g)) {
      const line = Number(m[1]);
      assert.ok(firstOfLine(rootRange, line), `the quick start names Node ${line}`);
    }
    for (const { from } of alternatives(rootRange)) {
      const first = firstOfLine(rootRange, from[0]) as Version;
      assert.ok(
        text.includes(`Node ${first[0]}.${first[1]} or later`),
        `the quick start says "Node ${first[0]}.${first[1]} or later"`,
      );
    }
    assert.ok(text.includes(`"${rootRange}"`), 'the quick start quotes the range');
    if (firstOfLine(rootRange, 20))
      assert.match(
        text,
        /Node 20\b[^:]*end of life/,
        'the quick start says Node 20 is end of life',
      );
  });
});
