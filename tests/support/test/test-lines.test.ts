// @test-lines: once - reads the test files' text; no part of Node's that changes by line is involved
// The rule CI's lines follow: every test file says whether the Node line can change its outcome
// (`@test-lines: every`, run on every supported line) or not (`@test-lines: once`, run once per
// CI run, on the full line). A file that says nothing, or says `once` while its own code reaches a
// driver, async context, a child process, a signal or a raw socket, fails here, so a new
// line-dependent test cannot silently skip a line.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { lineDirective, lineUses } from '@kit/test-support/test-lines';

const ROOT = path.resolve(import.meta.dirname, '../../..');

function testFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (/\.test\.ts$/.test(name) && full.split(path.sep).includes('test')) files.push(full);
    }
  };
  for (const root of ['packages', 'examples', 'docs', 'tests']) walk(path.join(ROOT, root));
  return files;
}

/**
 * A heavy file (faults under load, fleets of processes) or one the compiler alone decides is
 * once-per-CI by its own switch (tests/support's `heavy`, `lineIndependent`): its reason says
 * which, and the file uses it.
 */
function byItsOwnSwitch(file: string): boolean {
  const why = lineDirective(file)?.why ?? '';
  const text = readFileSync(file, 'utf8');
  return (
    (why.startsWith('heavy:') && /\bheavy\(/.test(text)) ||
    (why.startsWith('compiler:') && /\blineIndependent\(/.test(text))
  );
}

describe('the Node lines each test file runs on', () => {
  const files = testFiles();

  it('every test file states whether the Node line can change its outcome', () => {
    const silent = files
      .filter((f) => lineDirective(f) === undefined)
      .map((f) => path.relative(ROOT, f));
    assert.deepEqual(
      silent,
      [],
      'add `// @test-lines: every - <why>` or `// @test-lines: once - <why>` among the first lines',
    );
  });

  it('a file that runs once reaches no part of Node that changes from line to line', () => {
    const wrong = files
      .filter((f) => lineDirective(f)?.lines === 'once' && !byItsOwnSwitch(f))
      .flatMap((f) =>
        lineUses(f).map(
          (u) => `${path.relative(ROOT, f)}: ${u.name} in ${path.relative(ROOT, u.in)}`,
        ),
      );
    assert.deepEqual(
      wrong,
      [],
      'these run on one line only but use what the line decides: mark them `every`, or reach the part through Kit or tests/support',
    );
  });

  it("each engine's and store's conformance suite, the processes and the packages run on every line", () => {
    const mustRunEverywhere = [
      'packages/autocrud/test/postgres.test.ts',
      'packages/autocrud/test/pglite.test.ts',
      'packages/autocrud/test/sqlite.test.ts',
      'packages/store-redis/test/conformance.test.ts',
      'packages/core/test/audit-correlation.test.ts',
      'packages/core/test/lifecycle.test.ts',
      'tests/packaging/test/tarball.test.ts',
    ];
    for (const f of mustRunEverywhere)
      assert.equal(lineDirective(path.join(ROOT, f))?.lines, 'every', f);
  });

  it('the rule sees what it looks for', () => {
    // A detector that found nothing would pass every `once`: hold it to files known to use each part.
    const uses = (f: string): string[] => [
      ...new Set(lineUses(path.join(ROOT, f)).map((u) => u.name)),
    ];
    assert.ok(uses('packages/core/test/audit-correlation.test.ts').includes('async context'));
    assert.ok(uses('packages/core/test/lifecycle.test.ts').includes('signals'));
    assert.ok(uses('packages/store-redis/test/conformance.test.ts').includes('ioredis'));
    assert.ok(uses('packages/autocrud/test/two-instances.test.ts').includes('pg'));
  });
});
