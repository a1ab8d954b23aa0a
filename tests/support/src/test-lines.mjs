// Which test files depend on the Node line. CI runs the whole suite once, on its full line, and
// on every other supported line only the files whose outcome can change with the line. Each test
// file says which it is in a directive among its first lines:
//
//   // @test-lines: every - <why: what of Node's it exercises>
//   // @test-lines: once - <why the line cannot change its outcome>
//
// A file without a directive, or a `once` file whose own code reaches a part of Node that changes
// from line to line, is refused by tests/support/test/test-lines.test.ts: a new test decides,
// and cannot skip a line by saying nothing. What counts as line-dependent is LINE_DEPENDENT below.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** The directive, on one of a file's first 40 lines. */
const DIRECTIVE = /^\/\/ @test-lines: (every|once) - (\S.*)$/m;

/**
 * What Node's line decides, as it appears in a test's own code: the database and store drivers,
 * async context, child processes and signals, raw sockets, worker threads. A test that reaches an
 * engine only through Kit's API leaves the driver to that engine's conformance suite, which runs
 * on every line. (A Writable that collects log lines is the test's harness, not its subject, so
 * `node:stream` is not in the list.)
 */
export const LINE_DEPENDENT = [
  { name: 'node:sqlite', pattern: /from 'node:sqlite'/ },
  { name: 'PGlite', pattern: /from '@electric-sql\/pglite[^']*'/ },
  { name: 'pg', pattern: /from 'pg'/ },
  { name: 'ioredis', pattern: /from 'ioredis'/ },
  { name: 'async context', pattern: /from 'node:async_hooks'|AsyncLocalStorage|getCorrelationId/ },
  { name: 'child processes', pattern: /from 'node:child_process'/ },
  { name: 'signals', pattern: /process\.kill\(|'SIG(?:TERM|INT|KILL|HUP|USR2)'/ },
  { name: 'sockets', pattern: /from 'node:(?:net|tls|dgram)'/ },
  { name: 'worker threads', pattern: /from 'node:worker_threads'/ },
];

/**
 * Test-side helpers that start or drive real parts (servers, compilers, the process host) for a
 * test without being its subject: a `once` file may import them. They live in tests/support, but
 * for an engine's own set-up and the fleet's balancer.
 */
const SHARED_PARTS = [
  /[\\/]tests[\\/]support[\\/]/,
  /[\\/]autocrud[\\/]test[\\/]suite[\\/](?:engines|fixtures)\.ts$/,
];

/**
 * A test file's directive.
 *
 * @example
 * ```js
 * lineDirective('packages/autocrud/test/sqlite.test.ts'); // { lines: 'every', why: 'node:sqlite …' }
 * ```
 * @param {string} file
 * @returns {{ lines: 'every' | 'once', why: string } | undefined}
 */
export function lineDirective(file) {
  const head = readFileSync(file, 'utf8').split('\n').slice(0, 40).join('\n');
  const m = DIRECTIVE.exec(head);
  return m ? { lines: /** @type {'every' | 'once'} */ (m[1]), why: m[2] } : undefined;
}

/**
 * What of LINE_DEPENDENT a file's own code reaches: the file and the test-side modules it imports
 * by relative path, transitively, but not the package sources under test (Kit's API) nor the
 * shared parts.
 *
 * @example
 * ```js
 * lineUses('packages/core/test/audit-correlation.test.ts'); // [{ name: 'async context', in: '…' }]
 * ```
 * @param {string} file
 * @returns {{ name: string, in: string }[]}
 */
export function lineUses(file) {
  const seen = new Set();
  const found = [];
  const visit = (f) => {
    const full = path.resolve(f);
    if (seen.has(full)) return;
    seen.add(full);
    const text = readFileSync(full, 'utf8');
    // A type-only import brings no code of the module in.
    const code = text.replace(/import\s+type\s[^;]*?from\s*'[^']+';?/gs, '');
    for (const { name, pattern } of LINE_DEPENDENT)
      if (pattern.test(code)) found.push({ name, in: full });
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
      const target = resolveTs(path.resolve(path.dirname(full), m[1]));
      if (target === undefined) continue;
      const parts = target.split(path.sep);
      if (parts.includes('src') || SHARED_PARTS.some((p) => p.test(target))) continue;
      visit(target);
    }
  };
  visit(file);
  return found;
}

/** A relative import as written (`./x.js`, `./x.ts`, `./x`) to the file that holds it. */
function resolveTs(spec) {
  const candidates = [
    spec,
    spec.replace(/\.js$/, '.ts'),
    `${spec}.ts`,
    path.join(spec, 'index.ts'),
  ];
  return candidates.find(
    (c) => /\.(ts|mts|mjs|js)$/.test(c) && existsSync(c) && statSync(c).isFile(),
  );
}
