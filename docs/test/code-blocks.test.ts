// @test-lines: once - compiler: the TypeScript compiler decides these blocks (lineIndependent)
// Every code block of the README and the docs pages is checked, so the docs cannot drift from the
// code: TypeScript blocks are compiled together against the packages' sources (strict), JSON and
// YAML blocks must parse, HTTP examples must be a status line, headers and a JSON body, and shell
// blocks may only name npm scripts and workspaces that exist. `text` blocks are sample output.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  existsSync,
} from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { lineIndependent } from '@kit/test-support/heavy';
import { docsPages } from './pages.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

interface Block {
  file: string;
  line: number;
  lang: string;
  code: string;
}

function markdownFiles(): string[] {
  const files = ['README.md', 'ARCHITECTURE.md', ...docsPages()].filter((f) =>
    existsSync(path.join(root, f)),
  );
  for (const dir of ['packages', 'examples']) {
    for (const pkg of readdirSync(path.join(root, dir))) {
      if (existsSync(path.join(root, dir, pkg, 'README.md'))) files.push(`${dir}/${pkg}/README.md`);
    }
  }
  return files;
}

function blocksOf(file: string): Block[] {
  const lines = readFileSync(path.join(root, file), 'utf8').split('\n');
  const blocks: Block[] = [];
  let open: { lang: string; line: number; body: string[] } | undefined;
  lines.forEach((text, i) => {
    const fence = /^```(\S*)\s*$/.exec(text);
    if (!fence) {
      open?.body.push(text);
      return;
    }
    if (open) {
      blocks.push({ file, line: open.line, lang: open.lang, code: open.body.join('\n') });
      open = undefined;
    } else {
      open = { lang: fence[1] ?? '', line: i + 1, body: [] };
    }
  });
  assert.equal(
    open,
    undefined,
    `${file}: a code fence opened at line ${open?.line} is never closed`,
  );
  return blocks;
}

const blocks = markdownFiles().flatMap(blocksOf);
const KNOWN = new Set(['ts', 'typescript', 'json', 'sh', 'yaml', 'http', 'text']);

describe('documentation code blocks', () => {
  it('every block names a language the check knows', () => {
    const unknown = blocks
      .filter((b) => !KNOWN.has(b.lang))
      .map((b) => `${b.file}:${b.line} "${b.lang}"`);
    assert.deepEqual(
      unknown,
      [],
      'give each block a language: ts, json, sh, yaml, http or text (sample output)',
    );
  });

  lineIndependent("TypeScript blocks compile (strict, against the packages' sources)", () => {
    it(
      "TypeScript blocks compile (strict, against the packages' sources)",
      { timeout: 120_000 },
      () => {
        const ts = blocks.filter((b) => b.lang === 'ts' || b.lang === 'typescript');
        assert.ok(ts.length > 0);
        const dir = path.join(root, '.tmp', 'doc-blocks');
        rmSync(dir, { recursive: true, force: true });
        // Blocks live in app/endpoints/ so that both './x.js' and '../x.js' reach the fixtures.
        mkdirSync(path.join(dir, 'app', 'endpoints'), { recursive: true });
        const fixtures = path.join(root, 'docs', 'test', 'fixtures');
        cpSync(fixtures, path.join(dir, 'app'), { recursive: true });
        cpSync(fixtures, path.join(dir, 'app', 'endpoints'), { recursive: true });
        const names = new Map<string, Block>();
        for (const block of ts) {
          const name = `${block.file.replace(/[/.]/g, '_')}_L${block.line}.ts`;
          names.set(name, block);
          // `export {}` makes every block a module: its own declarations shadow the shared fixtures.
          writeFileSync(path.join(dir, 'app', 'endpoints', name), `${block.code}\nexport {};\n`);
        }
        writeFileSync(
          path.join(dir, 'tsconfig.json'),
          JSON.stringify({
            extends: path.join(root, 'tsconfig.base.json'),
            compilerOptions: {
              noEmit: true,
              declaration: false,
              declarationMap: false,
              sourceMap: false,
              noUnusedLocals: false,
            },
            include: ['app'],
          }),
        );
        const tsc = spawnSync(
          process.execPath,
          [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir],
          { encoding: 'utf8' },
        );
        // Point each error at the markdown line it comes from.
        const report = (tsc.stdout + tsc.stderr).replace(
          /(?:\.tmp\/doc-blocks\/)?app\/endpoints\/([^(]+)\((\d+),(\d+)\)/g,
          (whole, name: string, line: string) => {
            const block = names.get(name);
            return block ? `${block.file}:${block.line + Number(line)}` : whole;
          },
        );
        assert.equal(tsc.status, 0, report);
      },
    );
  });

  it('JSON blocks parse', () => {
    for (const block of blocks.filter((b) => b.lang === 'json')) {
      for (const line of block.code.trim().startsWith('{\n') || block.code.trim().startsWith('[')
        ? [block.code]
        : block.code.split('\n').filter((l) => l.trim() !== '')) {
        assert.doesNotThrow(
          () => JSON.parse(line),
          `${block.file}:${block.line}: not JSON: ${line.slice(0, 80)}`,
        );
      }
    }
  });

  it('YAML blocks parse', () => {
    for (const block of blocks.filter((b) => b.lang === 'yaml')) {
      assert.doesNotThrow(() => parseYaml(block.code), `${block.file}:${block.line}`);
    }
  });

  it('HTTP examples are a status line, headers and a JSON body', () => {
    for (const block of blocks.filter((b) => b.lang === 'http')) {
      const [head = '', body = ''] = block.code.split(/\n\n/);
      const [status, ...headers] = head.split('\n');
      assert.match(
        status ?? '',
        /^(HTTP\/1\.1 \d{3} .+|(GET|POST|PUT|PATCH|DELETE) \/\S* HTTP\/1\.1)$/,
        `${block.file}:${block.line}`,
      );
      for (const h of headers)
        assert.match(h, /^[a-z0-9-]+: .+$/i, `${block.file}:${block.line}: header ${h}`);
      if (body.trim() !== '')
        assert.doesNotThrow(
          () => JSON.parse(body),
          `${block.file}:${block.line}: body is not JSON`,
        );
    }
  });

  it('shell blocks name npm scripts and workspaces that exist', () => {
    const pkgScripts = (dir: string): Record<string, string> =>
      (
        JSON.parse(readFileSync(path.join(root, dir, 'package.json'), 'utf8')) as {
          scripts?: Record<string, string>;
        }
      ).scripts ?? {};
    for (const block of blocks.filter((b) => b.lang === 'sh')) {
      for (const command of block.code
        .split('\n')
        .flatMap((l) => l.replace(/#.*$/, '').split('&&'))) {
        const npm = /\bnpm (run|start|test)\b(?:\s+([\w:-]+))?(?:.*?\s-w\s+(\S+))?/.exec(command);
        if (!npm) continue;
        const workspace = npm[3] ?? '.';
        assert.ok(
          existsSync(path.join(root, workspace, 'package.json')),
          `${block.file}:${block.line}: no workspace ${workspace}`,
        );
        const script = npm[1] === 'run' ? npm[2] : npm[1];
        assert.ok(
          script && script in pkgScripts(workspace),
          `${block.file}:${block.line}: no npm script "${script}" in ${workspace}`,
        );
      }
      for (const file of block.code.matchAll(
        /\bnode\s+((?:scripts|bench|examples|packages)\/\S+)/g,
      )) {
        assert.ok(
          existsSync(path.join(root, file[1]!)),
          `${block.file}:${block.line}: no file ${file[1]}`,
        );
      }
    }
  });
});
