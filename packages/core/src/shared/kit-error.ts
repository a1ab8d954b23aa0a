// KitError and the machinery of the error catalogues. Each package declares every code it throws
// in one catalogue (core's: error-codes.ts), as Fastify's lib/errors.js does: the code, the HTTP
// status when the error answers a request, the message when every place that throws the code says
// the same thing, and when it happens (the docs' error tables are generated from that). Each
// catalogue adds its codes to KitErrorCodes, so `err.code === 'KIT_ERR_…'` is checked by
// TypeScript against the codes of the packages a program uses.

/**
 * Every error code of the Kit packages a program imports, as keys: each package's catalogue adds
 * its own (`@kit/autocrud` and `@kit/store-redis` augment this interface when imported).
 * {@link KitErrorCode} is the union of its keys.
 *
 * @example
 * ```ts
 * // A package that extends Kit adds its catalogue's codes:
 * declare module '@kit/core' {
 *   interface KitErrorCodes extends Record<keyof typeof reportErrors.codes, true> {}
 * }
 * ```
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by each package's catalogue (declaration merging)
export interface KitErrorCodes {}

/**
 * A Kit error code (`KIT_ERR_…`): one of the codes the catalogues of the imported Kit packages
 * declare. Comparing `err.code` with a string that is none of them is a type error.
 *
 * @example
 * ```ts
 * const retryable: ReadonlySet<KitErrorCode> = new Set(['KIT_ERR_STORE_UNAVAILABLE']);
 * ```
 */
export type KitErrorCode = keyof KitErrorCodes;

/**
 * Kit errors carry a stable `code` (`KIT_ERR_…`) in the style of Fastify's `FST_ERR_…`, and a
 * message that names the option or class at fault and says how to fix it. The codes, their HTTP
 * status and when each happens are listed in each package's catalogue (`coreErrors` here).
 *
 * @example
 * ```ts
 * try {
 *   await useKit(app);
 * } catch (err) {
 *   if (err instanceof KitError && err.code === 'KIT_ERR_DEPENDENCY') app.log.fatal(err.message);
 *   throw err;
 * }
 * ```
 */
export class KitError extends Error {
  /** Stable, documented error code such as `KIT_ERR_INVALID_OPTION`. */
  readonly code: KitErrorCode;

  /**
   * @param code A code of a Kit package's catalogue.
   * @param message What went wrong, naming the option, value or class at fault, and the fix.
   */
  constructor(code: KitErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KitError';
    this.code = code;
  }
}

/**
 * One code of a package's error catalogue.
 *
 * @example
 * ```ts
 * const spec: KitErrorSpec = { status: 503, message: 'The {store} store is unavailable.', when: 'a store call while the store is down' };
 * ```
 */
export interface KitErrorSpec {
  /** The HTTP status the error answers a request with; absent for errors of configuration and start-up. */
  readonly status?: number;
  /**
   * The message, when every place that throws the code says the same thing; `{name}` marks a
   * value the thrower fills in. Absent when each place composes its own (a code such as
   * `KIT_ERR_INVALID_OPTION` names a different option, value and expected form at each).
   */
  readonly message?: string;
  /** When it happens, as the docs' error table says it. */
  readonly when: string;
}

// The names in braces of a message template: 'No {thing} in {place}.' -> 'thing' | 'place'.
type Placeholders<S> = S extends `${string}{${infer P}}${infer Rest}`
  ? P | Placeholders<Rest>
  : never;
// The codes of a catalogue that have a message template.
type Templated<T> = {
  [C in keyof T]: T[C] extends { readonly message: string } ? C : never;
}[keyof T] &
  string;
type TemplateOf<T, C extends keyof T> = T[C] extends { readonly message: infer M } ? M : never;
/** What fills a template: nothing when it has no placeholder, else a value for each. */
type Values<M> = [Placeholders<M>] extends [never]
  ? [values?: undefined]
  : [values: Readonly<Record<Placeholders<M>, string | number>>];

/**
 * A package's error catalogue: its codes, and the messages and errors of the codes that have a
 * message template.
 *
 * @example
 * ```ts
 * throw reportErrors.error('REPORT_ERR_MISSING', { name: 'daily' });
 * ```
 */
export interface KitErrorCatalogue<T extends Readonly<Record<string, KitErrorSpec>>> {
  /** Every code, with its status, template and docs line. */
  readonly codes: T;
  /** The code's message, its placeholders filled. */
  message<C extends Templated<T>>(code: C, ...values: Values<TemplateOf<T, C>>): string;
  /** A KitError with the code and its message. */
  error<C extends Templated<T>>(
    code: C,
    ...args: [...Values<TemplateOf<T, C>>, options?: { cause?: unknown }]
  ): KitError;
}

function fill(
  template: string,
  values: Readonly<Record<string, string | number>> | undefined,
): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) =>
    values !== undefined && name in values ? String(values[name]) : whole,
  );
}

/**
 * Declares a package's error catalogue (core's is `coreErrors`). The package then adds its codes
 * to {@link KitErrorCodes}, so that `new KitError(code, …)` and `err.code === …` accept them.
 *
 * @param codes Every code the package throws, by name (`KIT_ERR_…`), with its status, message template and docs line.
 * @example
 * ```ts
 * export const reportErrors = errorCatalogue({
 *   REPORT_ERR_MISSING: { status: 404, message: 'No report named {name}.', when: 'a report is asked for by a name that does not exist' },
 * });
 * declare module '@kit/core' {
 *   interface KitErrorCodes extends Record<keyof typeof reportErrors.codes, true> {}
 * }
 * ```
 */
export function errorCatalogue<const T extends Readonly<Record<string, KitErrorSpec>>>(
  codes: T,
): KitErrorCatalogue<T> {
  const template = (code: string): string => {
    const message = codes[code]?.message;
    if (message === undefined)
      throw new TypeError(
        `${code} has no message template in its catalogue: compose its message where it is thrown.`,
      );
    return message;
  };
  return Object.freeze({
    codes: Object.freeze(codes),
    message: (code: string, values?: Readonly<Record<string, string | number>>) =>
      fill(template(code), values),
    error: (
      code: string,
      values?: Readonly<Record<string, string | number>>,
      options?: { cause?: unknown },
    ) => new KitError(code as KitErrorCode, fill(template(code), values), options),
  }) as unknown as KitErrorCatalogue<T>;
}
