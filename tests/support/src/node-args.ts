// The arguments that make a Node process run Kit's TypeScript from source: the packages resolved
// to their sources (`kit-source`) and the TypeScript loader ./ts-loader.mjs picks for this line
// (the hooks of ./ts-hooks.mjs, or tsx), named by file URL so that a child started in another
// working directory (a temporary project, the sample's folder) finds it.
import { typescriptLoader } from './ts-loader.mjs';

/**
 * Node's arguments before a `.ts` entry file, for a child process run from source.
 *
 * @example
 * ```ts
 * spawn(process.execPath, [...typescriptArgs, 'fixtures/host.ts'], { stdio: 'inherit' });
 * ```
 */
export const typescriptArgs: readonly string[] = [
  '--conditions=kit-source',
  '--import',
  typescriptLoader(),
];
