// @test-lines: once - reads the test files' text
// What the tests share lives in @kit/test-support and is imported by its package name. This test
// keeps it that way: a test file that reaches into another package's test folder (or scripts/)
// by relative path ties two packages' test layouts together so that moving one breaks the other,
// and a second polling helper next to `until` (or a second kitApp) is how seven variants with six
// signatures grew.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

const repo = path.resolve(import.meta.dirname, '..', '..', '..');
const ROOTS = ['packages', 'examples', 'docs', 'tests', 'bench'];

/**
 * Scripts the tests check as they are (the API report, the error tables): tools of the repository
 * run by `npm run`, not test helpers, so a test imports the real thing it verifies.
 */
const CHECKED_SCRIPTS = new Set(['scripts/api-report.ts', 'scripts/error-tables.ts']);

/** Every .ts file of the test code: test folders, the support workspace, bench scripts. */
function testSources(): string[] {
  const files: string[] = [];
  const walk = (dir: string, inTests: boolean): void => {
    for (const name of readdirSync(dir).sort()) {
      if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
      const full = path.join(dir, name);
      const rel = path.relative(repo, full);
      if (statSync(full).isDirectory())
        walk(
          full,
          inTests || name === 'test' || rel.startsWith('tests') || rel.startsWith('bench'),
        );
      else if (inTests && name.endsWith('.ts') && !name.endsWith('.d.ts')) files.push(rel);
    }
  };
  for (const root of ROOTS) walk(path.join(repo, root), false);
  return files;
}

/** The workspace a repository path belongs to: `packages/core`, `examples/sample-api`, `tests/support`, `docs`, `bench`, `scripts`. */
function workspaceOf(rel: string): string {
  const [top, second] = rel.split(path.sep);
  return top === 'packages' || top === 'examples' || top === 'tests'
    ? `${top}/${second}`
    : (top ?? '');
}

/** The relative module specifiers of a file: static imports and exports, dynamic imports. */
function relativeSpecifiers(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(
    /(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm,
  ))
    found.push(m[1]!);
  return found;
}

/** Reaching across: into another workspace's test folder, or into scripts/ (other than a checked script). */
function crossing(file: string, specifier: string): string | undefined {
  const target = path.normalize(path.join(path.dirname(file), specifier)).replace(/\.js$/, '.ts');
  const targetParts = target.split(path.sep);
  if (targetParts[0] === 'scripts')
    return CHECKED_SCRIPTS.has(target.split(path.sep).join('/')) ? undefined : target;
  if (workspaceOf(target) === workspaceOf(file)) return undefined;
  const inTestFolder = targetParts.includes('test') || workspaceOf(target) === 'tests/support';
  return inTestFolder ? target : undefined;
}

/** A definition of a polling helper by one of the names such helpers go by. */
const NAMES = '(?:until|waitFor|waitUntil|eventually|pollUntil|retryUntil)';
const POLLER = new RegExp(
  [
    `^\\s*(?:export\\s+)?(?:async\\s+)?function\\s*\\*?\\s*${NAMES}\\b`, // function until(...)
    `^\\s*(?:export\\s+)?(?:const|let|var)\\s+${NAMES}\\s*=\\s*(?:async\\b|\\()`, // const waitFor = async (...) =>
    `^\\s+async\\s+${NAMES}\\s*[<(]`, // a method: async until(...)
  ].join('|'),
  'm',
);

/** A reference to a numbered issue or review item: "issue 23", "issues 11", "(#17)", "round 3 issue". */
const ISSUE_NUMBER = /\bissues? #?\d+|\bround \d+ issue|(?<![\w#&/])#\d{1,4}\b(?![\w'"`-])/i;

describe('test support imports', () => {
  const files = testSources();

  it('finds the test code it checks', () => {
    assert.ok(
      files.some((f) => f.startsWith(path.join('packages', 'core', 'test'))),
      'core tests found',
    );
    assert.ok(
      files.includes(path.join('tests', 'support', 'src', 'until.ts')),
      'the support workspace found',
    );
  });

  it("no test file imports another package's test folder, the support sources or scripts/ by relative path (use @kit/test-support/<name>)", () => {
    const offences: string[] = [];
    for (const file of files) {
      for (const specifier of relativeSpecifiers(readFileSync(path.join(repo, file), 'utf8'))) {
        const target = crossing(file, specifier);
        if (target !== undefined) offences.push(`${file}: '${specifier}' (${target})`);
      }
    }
    assert.deepEqual(offences, []);
  });

  it('the check sees a crossing import when there is one', () => {
    assert.equal(
      crossing(
        path.join('packages', 'autocrud', 'test', 'a.test.ts'),
        '../../core/test/helpers.ts',
      ),
      path.join('packages', 'core', 'test', 'helpers.ts'),
    );
    assert.equal(
      crossing(
        path.join('packages', 'core', 'test', 'a.test.ts'),
        '../../../scripts/heavy-tests.ts',
      ),
      path.join('scripts', 'heavy-tests.ts'),
    );
    assert.equal(
      crossing(
        path.join('examples', 'sample-api', 'test', 'a.test.ts'),
        '../../../tests/support/src/until.ts',
      ),
      path.join('tests', 'support', 'src', 'until.ts'),
    );
    assert.equal(
      crossing(path.join('packages', 'core', 'test', 'a.test.ts'), './helpers.ts'),
      undefined,
    );
    assert.equal(
      crossing(path.join('packages', 'core', 'test', 'a.test.ts'), '../src/index.ts'),
      undefined,
    );
    assert.equal(
      crossing(
        path.join('packages', 'core', 'test', 'a.test.ts'),
        '../../../scripts/api-report.ts',
      ),
      undefined,
    );
  });

  it('one polling helper: `until` in tests/support/src/until.ts, no other definition of an until-like helper', () => {
    const definitions = files.filter((file) =>
      POLLER.test(readFileSync(path.join(repo, file), 'utf8')),
    );
    assert.deepEqual(definitions, [path.join('tests', 'support', 'src', 'until.ts')]);
  });

  it('one kitApp: the addKit/useKit wiring of test apps lives in tests/support/src/kit-app.ts', () => {
    const definitions = files.filter((file) =>
      /^\s*(?:export\s+)?(?:async\s+)?function\s+kitApp\b|^\s*(?:export\s+)?const\s+kitApp\s*=/m.test(
        readFileSync(path.join(repo, file), 'utf8'),
      ),
    );
    assert.deepEqual(definitions, [path.join('tests', 'support', 'src', 'kit-app.ts')]);
  });

  it('no issue numbers in test code: a comment or test name says what it checks and why', () => {
    // This file names the forms it looks for; every other file of test code is read.
    const self = path.relative(repo, import.meta.filename);
    const cited = files
      .filter((file) => file !== self)
      .flatMap((file) =>
        readFileSync(path.join(repo, file), 'utf8')
          .split('\n')
          .flatMap((line, i) =>
            ISSUE_NUMBER.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [],
          ),
      );
    assert.deepEqual(cited, []);
  });

  it('the check sees an issue number when there is one', () => {
    assert.ok(ISSUE_NUMBER.test('// A sink that hangs at shutdown (issue 12, item 7)'));
    assert.ok(ISSUE_NUMBER.test("it('keeps the order (#17)', () => {"));
    assert.ok(ISSUE_NUMBER.test('// found in round 3 issue 5'));
    assert.ok(!ISSUE_NUMBER.test("assert.deepEqual(events, ['create#1', 'patch#2']);"));
    assert.ok(!ISSUE_NUMBER.test("const issuer = 'https://issuer.example.com';"));
  });

  it('the check sees a second polling helper when there is one', () => {
    assert.ok(POLLER.test('async function waitFor(probe: () => boolean): Promise<void> {'));
    assert.ok(POLLER.test('export async function until<T>(what: string) {'));
    assert.ok(POLLER.test('    const waitFor = async (what: () => Promise<boolean>) => {'));
    assert.ok(POLLER.test('  async until(match: (line: string) => boolean): Promise<void> {'));
    assert.ok(!POLLER.test("    await until('the check healthy', probe, 5000);"));
    assert.ok(!POLLER.test("import { until } from '@kit/test-support/until';"));
    assert.ok(!POLLER.test('    const until = successor ? successor.inRotation : Infinity;'));
  });
});
