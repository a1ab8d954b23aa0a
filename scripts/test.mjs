#!/usr/bin/env node
// Runs every *.test.ts of the workspaces with node:test under tsx. Node 20's --test does not
// expand globs or pick up .ts files, so the files are listed here.
// Usage: node scripts/test.mjs [filter-substring ...]
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

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
const selected = filters.length ? files.filter((f) => filters.some((x) => f.includes(x))) : files;
if (selected.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const args = [
  '--conditions=kit-source',
  '--import',
  'tsx',
  '--test',
  `--test-concurrency=${process.env.KIT_TEST_CONCURRENCY ?? 2}`,
  '--test-reporter=spec',
  ...selected,
];
const result = spawnSync(process.execPath, args, { stdio: 'inherit' });
process.exit(result.status ?? 1);
