// Imports flow one way: no module of packages/*/src may reach itself again through its imports.
// Type-only imports count too (`import type`, `export type … from`): a type that flows back up is
// the start of the next value cycle, and it couples the modules all the same.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) sourceFiles(full, out);
    else if (/\.m?ts$/.test(name) && !name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

/** The relative imports of a file, resolved to files (`./x.js` is written for `./x.ts`). */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  const out: string[] = [];
  for (const { fileName } of importedFiles) {
    if (!fileName.startsWith('.')) continue;
    const base = path.resolve(path.dirname(file), fileName);
    const candidates = [base.replace(/\.(m?)js$/, '.$1ts'), base, `${base}.ts`, path.join(base, 'index.ts')];
    const found = candidates.find((c) => existsSync(c) && statSync(c).isFile());
    assert.ok(found, `${path.relative(ROOT, file)} imports ${fileName}, which does not resolve to a file`);
    out.push(found);
  }
  return out;
}

/**
 * Every strongly connected component of more than one module (or a module importing itself): one
 * concrete circle through it, and all the modules it holds.
 */
function findCycles(graph: ReadonlyMap<string, readonly string[]>): Array<{ circle: string[]; members: string[] }> {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: Array<{ circle: string[]; members: string[] }> = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push({ circle: pathThrough(graph, new Set(component), v), members: component.sort() });
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

// One concrete circle inside a component, for the message: breadth-first from v back to v.
function pathThrough(graph: ReadonlyMap<string, readonly string[]>, component: ReadonlySet<string>, v: string): string[] {
  const from = new Map<string, string>();
  const queue = [v];
  while (queue.length > 0) {
    const u = queue.shift() as string;
    for (const w of graph.get(u) ?? []) {
      if (!component.has(w)) continue;
      if (w === v) {
        const circle = [v];
        for (let x = u; x !== v; x = from.get(x) as string) circle.splice(1, 0, x);
        return [...circle, v];
      }
      if (!from.has(w)) {
        from.set(w, u);
        queue.push(w);
      }
    }
  }
  return [v, v];
}

test('no import cycle in packages/*/src (type-only imports included)', () => {
  const packages = readdirSync(path.join(ROOT, 'packages')).map((p) => path.join(ROOT, 'packages', p, 'src')).filter((d) => existsSync(d));
  assert.ok(packages.length >= 2, `found the packages' sources (${packages.length})`);
  const graph = new Map<string, string[]>();
  for (const file of packages.flatMap((d) => sourceFiles(d))) graph.set(file, importsOf(file));
  assert.ok(graph.size > 50, `scanned the sources (${graph.size} files)`);
  const rel = (f: string): string => path.relative(ROOT, f);
  const cycles = findCycles(graph).map((c) => `${c.circle.map(rel).join(' -> ')}   (the circle's modules: ${c.members.map(rel).join(', ')})`);
  assert.deepEqual(cycles, [], `import cycles:\n${cycles.join('\n')}`);
});

test('the cycle finder finds a circle through type-only imports and names it', () => {
  const graph = new Map<string, string[]>([
    ['options.ts', ['health/routes.ts', 'errors.ts']],
    ['health/routes.ts', ['runtime.ts']],
    ['runtime.ts', ['health/lifecycle.ts']],
    ['health/lifecycle.ts', ['runtime.ts', 'errors.ts']],
    ['errors.ts', []],
    ['self.ts', ['self.ts']],
  ]);
  assert.deepEqual(findCycles(graph), [
    { circle: ['runtime.ts', 'health/lifecycle.ts', 'runtime.ts'], members: ['health/lifecycle.ts', 'runtime.ts'] },
    { circle: ['self.ts', 'self.ts'], members: ['self.ts'] },
  ]);
  const { importedFiles } = ts.preProcessFile("import type { A } from './a.js';\nexport type { B } from './b.js';\n", true, true);
  assert.deepEqual(importedFiles.map((f) => f.fileName), ['./a.js', './b.js']);
});
