// How Kit's tests and the processes they start run TypeScript: `node --import
// @kit/test-support/ts-hooks` (with `--conditions=kit-source`, so the packages resolve to their
// sources), on the lines ./ts-loader.mjs picks it for. Where Node has synchronous module hooks
// (`module.registerHooks`: 22.15 and 23.5 on), the hooks below run on the module's own thread: a
// `.ts` file is transformed by esbuild once and then read from a cache on disk, keyed by its
// text. That halves what a process pays before its first test (docs/benchmarks.md, "Figures
// behind choices in the code"), and CI starts several hundred such processes. Without them, this
// module registers tsx instead.
//
// The transform is the one tsx makes: esbuild's TypeScript loader for this Node line, with the
// options of tsconfig.base.json that change emitted code (verbatimModuleSyntax keeps every value
// import, ES2022 class fields, the standard decorators lowered). A relative `./x.js` that does
// not exist resolves to `./x.ts`, as the sources write their imports for the compiled output.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import module from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

if (typeof module.registerHooks !== 'function') {
  await import('tsx');
} else {
  register(module.registerHooks);
}

/**
 * Installs the synchronous hooks.
 *
 * @param {typeof import('node:module').registerHooks} registerHooks
 */
function register(registerHooks) {
  const require = module.createRequire(import.meta.url);
  /** @type {typeof import('esbuild') | undefined} */
  let esbuild;
  const cacheDir = path.resolve(
    path.dirname(fileURLToPath(import.meta.url)),
    '../../../node_modules/.cache/kit-typescript',
  );
  mkdirSync(cacheDir, { recursive: true });
  const target = `node${process.versions.node}`;
  // What makes one transform differ from another besides the file: esbuild's version and the options.
  const options = {
    loader: /** @type {const} */ ('ts'),
    format: /** @type {const} */ ('esm'),
    target,
    sourcemap: /** @type {const} */ ('inline'),
    tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true, target: 'ES2022' } },
  };
  const esbuildVersion = JSON.parse(
    readFileSync(require.resolve('esbuild/package.json'), 'utf8'),
  ).version;
  const optionsKey = `${esbuildVersion}\0${JSON.stringify(options)}`;
  process.setSourceMapsEnabled(true);

  registerHooks({
    resolve(specifier, context, next) {
      try {
        return next(specifier, context);
      } catch (error) {
        const relative = specifier.startsWith('./') || specifier.startsWith('../');
        if (
          relative &&
          specifier.endsWith('.js') &&
          /** @type {{ code?: string }} */ (error).code === 'ERR_MODULE_NOT_FOUND'
        ) {
          return next(`${specifier.slice(0, -3)}.ts`, context);
        }
        throw error;
      }
    },
    load(url, context, next) {
      if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context);
      const file = fileURLToPath(url);
      const source = readFileSync(file, 'utf8');
      const key = createHash('sha256').update(optionsKey).update(file).update(source).digest('hex');
      const cached = path.join(cacheDir, `${key.slice(0, 40)}.mjs`);
      let code;
      try {
        code = readFileSync(cached, 'utf8');
      } catch {
        esbuild ??= require('esbuild');
        code = /** @type {typeof import('esbuild')} */ (esbuild).transformSync(source, {
          ...options,
          sourcefile: file,
        }).code;
        // Written whole, then renamed: a process reading it beside this one sees all or nothing.
        const partial = `${cached}.${process.pid}.partial`;
        writeFileSync(partial, code);
        renameSync(partial, cached);
      }
      return { format: 'module', source: code, shortCircuit: true };
    },
  });
}
