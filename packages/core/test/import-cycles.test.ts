// @test-lines: once - reads the sources' imports
// Imports flow one way: no module of packages/*/src may reach itself again through its imports,
// and in @kit/core no folder imports a folder on its own floor or above it (FLOORS below; the
// floors are drawn in docs/decisions.md, "Core's floors"). Type-only imports count too
// (`import type`, `export type … from`): a type that flows back up is the start of the next value
// cycle, and it couples the modules all the same.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import ts from 'typescript';
import { sourceFiles } from '@kit/test-support/source-files';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The relative imports of a file, resolved to files (`./x.js` is written for `./x.ts`). */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  const out: string[] = [];
  for (const { fileName } of importedFiles) {
    if (!fileName.startsWith('.')) continue;
    const base = path.resolve(path.dirname(file), fileName);
    const candidates = [
      base.replace(/\.(m?)js$/, '.$1ts'),
      base,
      `${base}.ts`,
      path.join(base, 'index.ts'),
    ];
    const found = candidates.find((c) => existsSync(c) && statSync(c).isFile());
    assert.ok(
      found,
      `${path.relative(ROOT, file)} imports ${fileName}, which does not resolve to a file`,
    );
    out.push(found);
  }
  return out;
}

/**
 * Every strongly connected component of more than one module (or a module importing itself): one
 * concrete circle through it, and all the modules it holds.
 */
function findCycles(
  graph: ReadonlyMap<string, readonly string[]>,
): Array<{ circle: string[]; members: string[] }> {
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
    if (component.length > 1 || (graph.get(v) ?? []).includes(v))
      cycles.push({ circle: pathThrough(graph, new Set(component), v), members: component.sort() });
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

// One concrete circle inside a component, for the message: breadth-first from v back to v.
function pathThrough(
  graph: ReadonlyMap<string, readonly string[]>,
  component: ReadonlySet<string>,
  v: string,
): string[] {
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
  const packages = readdirSync(path.join(ROOT, 'packages'))
    .map((p) => path.join(ROOT, 'packages', p, 'src'))
    .filter((d) => existsSync(d));
  assert.ok(packages.length >= 2, `found the packages' sources (${packages.length})`);
  const graph = new Map<string, string[]>();
  for (const file of packages.flatMap((d) => sourceFiles(d))) graph.set(file, importsOf(file));
  assert.ok(graph.size > 50, `scanned the sources (${graph.size} files)`);
  const rel = (f: string): string => path.relative(ROOT, f);
  const cycles = findCycles(graph).map(
    (c) =>
      `${c.circle.map(rel).join(' -> ')}   (the circle's modules: ${c.members.map(rel).join(', ')})`,
  );
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
    {
      circle: ['runtime.ts', 'health/lifecycle.ts', 'runtime.ts'],
      members: ['health/lifecycle.ts', 'runtime.ts'],
    },
    { circle: ['self.ts', 'self.ts'], members: ['self.ts'] },
  ]);
  const { importedFiles } = ts.preProcessFile(
    "import type { A } from './a.js';\nexport type { B } from './b.js';\n",
    true,
    true,
  );
  assert.deepEqual(
    importedFiles.map((f) => f.fileName),
    ['./a.js', './b.js'],
  );
});

/**
 * @kit/core's folders, ground first. A folder imports only folders on lower floors (and itself):
 * capabilities sit on the shared ground and the process lifecycle, the composition layer (kit/)
 * on top of every capability, the public surface (index.ts) on top of all. Two folders on one
 * floor do not import each other. A new folder needs its floor here.
 */
const CORE_FLOORS: ReadonlyArray<readonly string[]> = [
  ['shared', 'internals'], // helpers every floor uses: KitError and the error catalogue, enums, secrets, option checks, the container; the guarded reads of Fastify's and pino's private state
  ['lifecycle', 'tracing'], // the one owner of process signals and the order an app closes in; the OpenTelemetry tracer seam
  ['audit', 'health', 'stores', 'endpoints'], // capabilities that need no other capability
  ['problem', 'metrics'], // problem details carry the audit's correlation id; metrics read audit and health counters
  ['auth'], // adds the jwt health check, answers 401 as problem details
  ['openapi'], // documents problem answers and the bearer scheme
  ['kit'], // addKit/useKit: the start-up sequence, options, the running layer
  ['.'], // index.ts, the public surface
];

/** The folder of `src` a file is in (`.` for a file directly in it): the unit @kit/core's floors name. */
function topFolder(src: string, file: string): string {
  return path.relative(src, file).split(path.sep).slice(0, -1)[0] ?? '.';
}

/**
 * Every import from one unit of `src` to another that does not run strictly down the floors. A
 * unit is what `unitOf` says a file belongs to (by default its top folder); `table` names the
 * floors' list in the message for a unit on no floor.
 */
function upwardImports(
  graph: ReadonlyMap<string, readonly string[]>,
  src: string,
  floors: ReadonlyArray<readonly string[]>,
  unitOf: (src: string, file: string) => string = topFolder,
  table = 'CORE_FLOORS',
): string[] {
  const floorOf = new Map(floors.flatMap((names, i) => names.map((n) => [n, i] as const)));
  const out: string[] = [];
  for (const [file, imports] of graph) {
    if (!file.startsWith(src + path.sep)) continue;
    const from = unitOf(src, file);
    if (!floorOf.has(from)) {
      out.push(`${path.relative(src, file)}: folder ${from}/ is on no floor (add it to ${table})`);
      continue;
    }
    for (const target of imports) {
      if (!target.startsWith(src + path.sep)) continue;
      const to = unitOf(src, target);
      if (to === from) continue;
      if ((floorOf.get(to) ?? Infinity) >= (floorOf.get(from) as number))
        out.push(
          `${path.relative(src, file)} -> ${path.relative(src, target)} (floor of ${from}/: ${floorOf.get(from)}, of ${to}/: ${floorOf.get(to) ?? 'none'})`,
        );
    }
  }
  return out.sort();
}

test('no import in @kit/core runs up its floors or sideways between folders of one floor', () => {
  const src = path.join(ROOT, 'packages', 'core', 'src');
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(src)) graph.set(file, importsOf(file));
  const folders = new Set([...graph.keys()].map((f) => topFolder(src, f)));
  assert.deepEqual(
    [...folders].sort(),
    CORE_FLOORS.flat().sort(),
    'every folder of src/ is on a floor, and every floor names a folder that exists',
  );
  const upward = upwardImports(graph, src, CORE_FLOORS);
  assert.deepEqual(upward, [], `imports against the floors:\n${upward.join('\n')}`);
});

test('the floor check names an import that runs up, one that runs sideways, and a folder on no floor', () => {
  const src = '/r/src';
  const graph = new Map<string, string[]>([
    ['/r/src/index.ts', ['/r/src/kit/kit.ts']],
    ['/r/src/kit/kit.ts', ['/r/src/audit/trail.ts', '/r/src/shared/errors.ts']],
    [
      '/r/src/audit/trail.ts',
      ['/r/src/kit/runtime.ts', '/r/src/health/state.ts', '/r/src/audit/entry.ts'],
    ],
    ['/r/src/new/x.ts', []],
  ]);
  assert.deepEqual(upwardImports(graph, src, [['shared'], ['audit', 'health'], ['kit'], ['.']]), [
    'audit/trail.ts -> health/state.ts (floor of audit/: 1, of health/: 1)',
    'audit/trail.ts -> kit/runtime.ts (floor of audit/: 1, of kit/: 2)',
    'new/x.ts: folder new/ is on no floor (add it to CORE_FLOORS)',
  ]);
});

test('@kit/autocrud: the SQL layer (mapper/) imports nothing of the route layer (routes/) nor of Fastify', () => {
  const src = path.join(ROOT, 'packages', 'autocrud', 'src');
  const offending: string[] = [];
  for (const file of sourceFiles(path.join(src, 'mapper'))) {
    for (const target of importsOf(file))
      if (target.startsWith(path.join(src, 'routes')))
        offending.push(`${path.relative(src, file)} -> ${path.relative(src, target)}`);
    if (/from 'fastify'/.test(readFileSync(file, 'utf8')))
      offending.push(`${path.relative(src, file)} -> fastify`);
  }
  assert.deepEqual(offending, []);
});

/**
 * @kit/autocrud's SQL layer (src/mapper/), ground first. A unit is a folder, each engine's folder
 * on its own, and each file directly in mapper/. A unit imports only units on lower floors (and
 * itself); two units of one floor do not import each other. The write seam (seam/) sits under
 * reads and writes, and the change recorders (changes/: history, outbox records) above the writes
 * they record: a write hands its changes to the table's sinks and never knows who registered one.
 */
const MAPPER_FLOORS: ReadonlyArray<readonly string[]> = [
  ['rule-errors.ts'], // AutoCrud's rule errors (a write refused by the entity's rules), each with its status and problem
  ['errors.ts'], // the SQL layer's errors, each with its status and problem: every floor throws them
  ['sql'], // the ground: the engine and dialect contracts, the codecs' shared decoders, statements, conditions, scopes, stamps, statement spans
  ['engines/shared'], // what engines share: connection strings, the one-session queue
  ['engines/postgres', 'engines/sqlite'], // one engine each: driver, pool, probe, locks, migration session, columns, dialect
  ['engines/pglite'], // PostgreSQL in WebAssembly: PostgreSQL's dialect, a worker thread, a directory lock, a snapshot
  ['engines'], // the one place that picks an engine by the connection string
  ['schema', 'seam'], // the start-up schema check and table creation; the read/write seam (each entity's hooks, the table call)
  ['reads'], // related rows: embedded as JSON, or a statement per relation
  ['writes'], // single, bulk, upsert and atomic writes, reference checks, the one-statement recorded write
  ['history', 'outbox'], // layers on the seam, each registering itself at start-up: the change history; the outbox's records
  ['migrations'], // migration files, plans and their application
  ['repository.ts'], // an entity's reads and writes
  ['database.ts'], // the engine, its tables and repositories, open and closed
];

/** A file's unit in mapper/: a file directly in it, an engine's folder, or a top folder. */
function mapperUnit(src: string, file: string): string {
  const parts = path.relative(src, file).split(path.sep);
  if (parts.length === 1) return parts[0] as string;
  if (parts[0] === 'engines' && parts.length > 2) return `engines/${parts[1]}`;
  return parts[0] as string;
}

test('no import in the SQL layer of @kit/autocrud (mapper/) runs up its floors or sideways between units of one floor', () => {
  const src = path.join(ROOT, 'packages', 'autocrud', 'src', 'mapper');
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(src)) graph.set(file, importsOf(file));
  const units = new Set([...graph.keys()].map((f) => mapperUnit(src, f)));
  assert.deepEqual(
    [...units].sort(),
    MAPPER_FLOORS.flat().sort(),
    'every unit of mapper/ is on a floor, and every floor names a unit that exists',
  );
  const upward = upwardImports(graph, src, MAPPER_FLOORS, mapperUnit, 'MAPPER_FLOORS');
  assert.deepEqual(upward, [], `imports against the floors:\n${upward.join('\n')}`);
});

test('the mapper units: a file of mapper/ is its own unit, an engine folder is one, any other folder is one', () => {
  const src = '/r/mapper';
  assert.equal(mapperUnit(src, '/r/mapper/errors.ts'), 'errors.ts');
  assert.equal(mapperUnit(src, '/r/mapper/engines/create.ts'), 'engines');
  assert.equal(mapperUnit(src, '/r/mapper/engines/pglite/thread.ts'), 'engines/pglite');
  assert.equal(mapperUnit(src, '/r/mapper/writes/upsert.ts'), 'writes');
  const graph = new Map<string, string[]>([
    ['/r/mapper/writes/upsert.ts', ['/r/mapper/changes/history.ts', '/r/mapper/seam/changes.ts']],
    ['/r/mapper/changes/history.ts', ['/r/mapper/writes/bulk-insert.ts']],
  ]);
  assert.deepEqual(
    upwardImports(graph, src, [['seam'], ['writes'], ['changes']], mapperUnit, 'MAPPER_FLOORS'),
    ['writes/upsert.ts -> changes/history.ts (floor of writes/: 1, of changes/: 2)'],
  );
});
