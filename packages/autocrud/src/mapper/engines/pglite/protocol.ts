// The messages between the service's thread and the worker thread PGlite runs in (thread.ts
// and worker.ts).

/** What the worker is started with. */
export interface WorkerStart {
  /** The data directory, or undefined for an in-memory database. */
  readonly directory: string | undefined;
}

/** A statement for the worker. */
export interface WorkerQuery {
  readonly id: number;
  readonly sql: string;
  readonly parameters: readonly unknown[];
}

/** A driver error, as plain fields (SQLSTATE `code`, `detail`, `constraint`, …) the thread rebuilds an Error from. */
export type ErrorFields = { readonly message: string; readonly name: string } & Readonly<
  Record<string, string | number | undefined>
>;

/** What the worker posts back. */
export type WorkerMessage =
  | { readonly kind: 'ready'; readonly snapshot: 'loaded' | 'saved' | 'none'; readonly ms: number }
  | { readonly kind: 'failed'; readonly error: ErrorFields; readonly stderr: readonly string[] }
  | {
      readonly kind: 'result';
      readonly id: number;
      readonly command: string | undefined;
      readonly rowCount: number | undefined;
      readonly rows: unknown[];
    }
  | { readonly kind: 'error'; readonly id: number; readonly error: ErrorFields };

/**
 * A readable sentence for anything thrown: PGlite throws plain objects for file-system errors
 * (`{ name: 'ErrnoError', errno: 54 }`), which `String()` turns into `[object Object]`.
 */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'object' && err !== null) {
    const { message, name, errno, code } = err as Record<string, unknown>;
    if (typeof message === 'string' && message !== '') return message;
    const parts = [
      typeof name === 'string' ? name : 'error',
      typeof code === 'string' ? code : undefined,
      typeof errno === 'number' ? `errno ${errno}` : undefined,
    ];
    return parts.filter((p) => p !== undefined).join(' ');
  }
  return String(err);
}

/** The plain fields of an error, for postMessage (an Error's own properties do not all survive cloning). */
export function errorFields(err: unknown): ErrorFields {
  const fields: Record<string, string | number | undefined> = {};
  if (typeof err === 'object' && err !== null) {
    for (const [key, value] of Object.entries(err))
      if (typeof value === 'string' || typeof value === 'number') fields[key] = value;
  }
  const name = (err as { name?: unknown } | null)?.name;
  return {
    ...fields,
    name: typeof name === 'string' ? name : 'Error',
    message: describeError(err),
  };
}
