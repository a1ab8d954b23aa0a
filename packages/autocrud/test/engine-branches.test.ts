// @test-lines: once - reads the sources' syntax trees
// Outside the engines' own folders (src/mapper/engines/), no code of @kit/autocrud asks which engine
// it runs on: what differs is a member of the engine's dialect object (mapper/sql/dialect.ts) or of
// the engine itself. The check reads the syntax tree, so neither a comment nor a type counts, and
// a renamed variable does not hide a branch: what it looks for is an engine's name used as a value,
// a comparison of a dialect or engine, or the old dialect string's name.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { sourceFiles } from '@kit/test-support/source-files';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
/** Where engines are told apart: each engine's folder, and the one place that picks one by its connection string. */
const ENGINES = path.join(SRC, 'mapper', 'engines');

/** The engines' names as code could spell them (compared case-insensitively). */
const ENGINE_NAMES = new Set(['postgres', 'postgresql', 'pg', 'pglite', 'sqlite', 'sqlite3']);
/** The string-typed dialect this folder layout replaced: its names are not to come back. */
const OLD_NAMES = new Set(['flavour', 'flavor', 'sqlflavour', 'sqlflavor']);
const EQUALITY = new Set([
  ts.SyntaxKind.EqualsEqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsEqualsToken,
  ts.SyntaxKind.EqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsToken,
]);

/** Whether an expression names a dialect or an engine (or its kind): what comparing it would ask. */
function namesEngine(node: ts.Expression): boolean {
  let e: ts.Expression = node;
  while (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isNonNullExpression(e))
    e = e.expression;
  const last = ts.isPropertyAccessExpression(e)
    ? e.name.text
    : ts.isIdentifier(e)
      ? e.text
      : undefined;
  if (last === undefined) return false;
  if (/dialect$|engine$|^engineKind$/i.test(last)) return true;
  // `engine.kind`, `target.kind`, `dialect.name`: a member that tells engines apart (a dialect's
  // descriptive data, as its migration files' tag, may be compared with what it describes).
  if (ts.isPropertyAccessExpression(e) && /^(kind|name)$/.test(last))
    return /dialect|engine|target/i.test(e.expression.getText());
  return false;
}

/**
 * Every place in `text` that tells engines apart: an engine's name as a value (a string, an
 * object key or member, a `case`), an equality test of a dialect or engine, an `instanceof` an
 * engine's or a dialect's class, or the old dialect string's name. Types are not looked at.
 */
export function engineBranches(file: string, text: string): string[] {
  const source = ts.createSourceFile(
    file,
    text,
    ts.ScriptTarget.Latest,
    true,
    file.endsWith('.mts') ? ts.ScriptKind.TS : ts.ScriptKind.TS,
  );
  const found: string[] = [];
  const at = (node: ts.Node, what: string): void => {
    const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
    found.push(`${file}:${line + 1}: ${what}`);
  };
  const isEngineName = (name: string): boolean => ENGINE_NAMES.has(name.toLowerCase());
  const visit = (node: ts.Node): void => {
    if (ts.isTypeNode(node)) return; // `kind: 'postgres'` in a type says what is, not which is
    if (
      (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) &&
      isEngineName(node.text)
    )
      at(node, `the engine name '${node.text}' as a value`);
    if (
      ts.isPropertyAssignment(node) &&
      (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name)) &&
      isEngineName(node.name.text)
    )
      at(node, `a value keyed by the engine name '${node.name.text}'`);
    if (ts.isPropertyAccessExpression(node) && isEngineName(node.name.text))
      at(node, `a member named for the engine '${node.name.text}'`);
    if (ts.isIdentifier(node) && OLD_NAMES.has(node.text.toLowerCase()))
      at(node, `'${node.text}', the engine's dialect as a name rather than an object`);
    if (
      ts.isBinaryExpression(node) &&
      EQUALITY.has(node.operatorToken.kind) &&
      (namesEngine(node.left) || namesEngine(node.right))
    )
      at(node, `a comparison of an engine or dialect: ${node.getText(source)}`);
    if (
      ts.isBinaryExpression(node) &&
      node.operatorToken.kind === ts.SyntaxKind.InstanceOfKeyword &&
      /(Dialect|Engine|Adapter|Driver)$/.test(node.right.getText(source))
    )
      at(node, `an instanceof test of an engine's class: ${node.getText(source)}`);
    if (ts.isSwitchStatement(node) && namesEngine(node.expression))
      at(node, `a switch on an engine or dialect: ${node.expression.getText(source)}`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** What code outside the engines may import of them: the factory that picks one, and what engines share (connection strings). */
const ENGINE_DOORS = [path.join(ENGINES, 'create.ts'), path.join(ENGINES, 'shared') + path.sep];

/**
 * Every import (or re-export, or dynamic import) in `text`, a file at `file`, of a module inside
 * an engine's own folder (`engines/<name>/`), other than the doors above: outside the engines,
 * what differs per engine is reached through the dialect and engine objects only.
 */
export function engineImports(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const check = (node: ts.Node, specifier: string): void => {
    if (!specifier.startsWith('.')) return;
    const target = path.resolve(path.dirname(file), specifier.replace(/\.js$/, '.ts'));
    if (
      !target.startsWith(ENGINES + path.sep) ||
      ENGINE_DOORS.some((door) => target === door || target.startsWith(door))
    )
      return;
    const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
    found.push(`${path.relative(SRC, file)}:${line + 1}: imports ${path.relative(SRC, target)}`);
  };
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    )
      check(node, node.moduleSpecifier.text);
    if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    )
      check(node, node.arguments[0].text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('engine folders', () => {
  it("nothing outside src/mapper/engines/ imports an engine's folder: only the engine factory and what engines share", () => {
    const files = sourceFiles(SRC).filter((f) => !f.startsWith(ENGINES + path.sep));
    const imports = files.flatMap((f) => engineImports(f, readFileSync(f, 'utf8')));
    assert.deepEqual(
      imports,
      [],
      `imports of an engine's folder from outside mapper/engines/ (ask the dialect or the engine object instead):\n${imports.join('\n')}`,
    );
  });

  it('the check finds an import, a re-export, a type import and a dynamic import of an engine folder, and leaves the doors alone', () => {
    const file = path.join(SRC, 'mapper', 'reads', 'x.ts');
    const text = [
      "import { postgresDialect } from '../engines/postgres/dialect.js';",
      "export { sqliteDialect } from '../engines/sqlite/dialect.js';",
      "import type { Worker } from '../engines/pglite/worker.js';",
      "const m = await import('../engines/postgres/columns.js');",
      "import { createEngine } from '../engines/create.js';", // the factory: allowed
      "import { parseConnectionString } from '../engines/shared/connection-string.js';", // shared: allowed
      "import { sql } from 'kysely';",
      "import type { SqlDialect } from '../sql/dialect.js';",
    ].join('\n');
    assert.deepEqual(
      engineImports(file, text).map((i) => Number(i.split(':')[1])),
      [1, 2, 3, 4],
    );
  });
});

describe('engine branches', () => {
  it('none outside src/mapper/engines/: the dialect and engine objects carry what differs', () => {
    const files = sourceFiles(SRC).filter((f) => !f.startsWith(ENGINES + path.sep));
    assert.ok(files.length > 60, `scanned the sources (${files.length} files)`);
    assert.ok(
      files.some((f) => f.includes(`${path.sep}writes${path.sep}`)),
      'the scan covers the mapper folders',
    );
    const branches = files.flatMap((f) =>
      engineBranches(path.relative(SRC, f), readFileSync(f, 'utf8')),
    );
    assert.deepEqual(
      branches,
      [],
      `engine branches outside mapper/engines/ (move what differs into the dialect objects):\n${branches.join('\n')}`,
    );
  });

  it('the check finds the branches a rename would hide, and leaves types and comments alone', () => {
    const text = [
      "if (flavour === 'sqlite') a();", // the old name, and an engine's name
      'if ("pglite" !== kind) b();', // an engine's name, whatever the variable is called
      'const big = `postgres` == x ? 1 : 2;',
      "switch (target.kind) { case 'postgres': break; }", // the switch, and its case
      'if (dialect === postgresDialect) c();', // which dialect it is
      'if (this.engine.kind !== other) d();',
      'const limits = { postgres: 1, sqlite: 2 };', // a table by engine
      'const n = limits.sqlite;',
      "if (['pglite', 'postgres'].includes(k)) e();",
      'if (db instanceof PostgresDialect) f();',
      'if (dialect.name === tag) g();',
      "type Kind = 'postgres' | 'sqlite';", // a type: not counted
      "// flavour === 'sqlite' in a comment: not counted",
      "const url = 'postgres://localhost';", // not an engine's name
      'if (dialect.writableCte) h();', // asking what the dialect can do: not counted
    ].join('\n');
    const lines = engineBranches('x.ts', text).map((b) => Number(b.split(':')[1]));
    assert.deepEqual(lines, [1, 1, 2, 3, 4, 4, 5, 6, 7, 7, 8, 9, 9, 10, 11]);
  });
});
