// Which module a process run from source imports first to load TypeScript (`--import <it>`).
//
// The hooks of ./ts-hooks.mjs where Node has synchronous module hooks and runs TypeScript itself
// (`process.features.typescript`: 22.18 and 23.6 on); tsx elsewhere. The second condition is not
// the hooks' need but the tests': Kit's endpoint discovery, like other code that asks "can this
// process import .ts?", looks for a known loader's name in the flags or for Node's own TypeScript
// support, and a process under hooks it cannot name would look like plain JavaScript to it.
import module from 'node:module';

/**
 * The `--import` specifier, as a file URL (so that a child started in another working directory
 * finds it).
 *
 * @example
 * ```js
 * spawn(process.execPath, ['--conditions=kit-source', '--import', typescriptLoader(), 'host.ts']);
 * ```
 * @returns {string}
 */
export function typescriptLoader() {
  const hooks =
    typeof module.registerHooks === 'function' &&
    Boolean(/** @type {{ typescript?: unknown }} */ (process.features).typescript);
  return import.meta.resolve(hooks ? './ts-hooks.mjs' : 'tsx');
}
