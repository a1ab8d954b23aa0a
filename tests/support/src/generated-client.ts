// A typed client as a user of the document makes one: types generated from a running app's
// /openapi.json by openapi-typescript at its default settings, a client module written against
// them, compiled with strict tsc (once per CI run: typeCheckOnce), and imported. One helper for the
// tests that check the document through such a client (the sample's products, AutoCrud's includes).
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { typeCheckOnce } from './heavy.ts';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../../../', import.meta.url));

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  },
  include: ['*.ts'],
};

interface OpenapiTypescript {
  default(document: unknown): Promise<unknown>;
  astToString(ast: unknown): string;
}

// openapi-typescript is installed for the sample (its peer range, TypeScript 5, keeps it out of the
// workspace root's dependencies): every caller loads that copy. `require.resolve` names its
// CommonJS build, whose `import()` gives module.exports as `default`: the API is read from there.
async function openapiTypescript(): Promise<OpenapiTypescript> {
  const fromSample = createRequire(path.join(repo, 'examples', 'sample-api', 'package.json'));
  const loaded = (await import(pathToFileURL(fromSample.resolve('openapi-typescript')).href)) as
    OpenapiTypescript | { default: OpenapiTypescript };
  return typeof loaded.default === 'function' ? (loaded as OpenapiTypescript) : loaded.default;
}

/** Writes `client` (which imports `./api.js`) beside the types of `base`'s /openapi.json in `dir`, checks it with strict tsc, and imports it. */
export async function generatedClient(
  t: TestContext,
  base: string,
  dir: string,
  client: string,
): Promise<{ roundTrip(base: string): Promise<unknown> }> {
  const { default: openapiTS, astToString } = await openapiTypescript();
  await writeFile(
    path.join(dir, 'api.d.ts'),
    astToString(await openapiTS(await (await fetch(`${base}/openapi.json`)).json())),
  );
  await writeFile(path.join(dir, 'client.ts'), client);
  await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG));
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc', { paths: [repo] });
  await typeCheckOnce(t, 'the generated client under strict tsc', () =>
    run(process.execPath, [tsc, '-p', dir]).catch((err: { stdout?: string; message: string }) => {
      throw new Error(`the generated client does not compile:\n${err.stdout ?? err.message}`);
    }),
  );
  return (await import(pathToFileURL(path.join(dir, 'client.ts')).href)) as {
    roundTrip(base: string): Promise<unknown>;
  };
}
