#!/usr/bin/env node
// Runs every *.test.ts of the workspaces with node:test, through the TypeScript loader of
// tests/support/src/ts-loader.mjs (synchronous hooks and a transform cache, or tsx on Node 20).
// Node 20's --test does not expand globs or pick up .ts files, so the files are listed here.
// Usage: node scripts/test.mjs [filter-substring ...]
// KIT_TEST_LINES=every (set by .ci/run on the lines other than its full one) keeps only the files
// whose `@test-lines: every` directive says the Node line can change their outcome
// (tests/support/src/test-lines.mjs holds the rule).
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { lineDirective } from '../tests/support/src/test-lines.mjs';
import { typescriptLoader } from '../tests/support/src/ts-loader.mjs';

const roots = ['packages', 'examples', 'docs', 'tests'];
const files = [];
function walk(dir) {
  for (const name of readdirSync(dir).sort()) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) walk(full);
    else if (/\.test\.ts$/.test(name) && full.split(path.sep).includes('test')) files.push(full);
  }
}
for (const root of roots) walk(root);
const filters = process.argv.slice(2);
let selected = filters.length ? files.filter((f) => filters.some((x) => f.includes(x))) : files;
const lines = process.env.KIT_TEST_LINES ?? 'all';
if (lines === 'every') {
  const all = selected.length;
  selected = selected.filter((f) => lineDirective(f)?.lines !== 'once');
  console.log(
    `KIT_TEST_LINES=every: ${selected.length} of ${all} test files, those whose outcome the Node line can change (the others run once per CI run, on its full line)`,
  );
} else if (lines !== 'all') {
  console.error(`KIT_TEST_LINES must be 'all' or 'every', not '${lines}'`);
  process.exit(2);
}
if (selected.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const args = [
  '--conditions=kit-source',
  '--import',
  typescriptLoader(),
  '--test',
  `--test-concurrency=${process.env.KIT_TEST_CONCURRENCY ?? 2}`,
  '--test-reporter=spec',
  ...selected,
];
const result = spawnSync(process.execPath, args, { stdio: 'inherit' });
process.exit(result.status ?? 1);
