/**
 * The `--import` specifier that loads TypeScript in a process run from source, as a file URL.
 *
 * @example
 * ```ts
 * spawn(process.execPath, ['--conditions=kit-source', '--import', typescriptLoader(), 'host.ts']);
 * ```
 */
export function typescriptLoader(): string;
