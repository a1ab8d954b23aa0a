// How an error answers a request of a generated route: the shape the routes' one error handler
// renders (status, problem detail, the parameters at fault, members, headers, a log line), the
// protocol an error follows to say it (Answerable), and the fill of the catalogue's problem
// templates (errors.ts). Nothing here imports an HTTP library: the mapper's errors use it too.
import { KitError } from '@kit/core';
import { autoCrudErrors, routeProblems } from './errors.js';

/**
 * A template filled: `{name}` replaced by `values.name`; a name without a value stays as written.
 *
 * @example
 * ```ts
 * fillProblem('No {entity} with {pk} {key}.', { entity: 'Product', pk: 'id', key: '7' });
 * ```
 */
export function fillProblem(
  template: string,
  values?: Readonly<Record<string, string | number>>,
): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) =>
    values !== undefined && name in values ? String(values[name]) : whole,
  );
}

type Codes = typeof autoCrudErrors.codes;
/** The codes whose catalogue entry holds the problem texts of the routes' answers. */
type AnsweredCode = {
  [C in keyof Codes]: Codes[C] extends { readonly problem: object } ? C : never;
}[keyof Codes];
type ProblemsOf<C extends AnsweredCode> = Codes[C] extends { readonly problem: infer P }
  ? P
  : never;

/**
 * One of a code's problem texts (`variant`), filled with `values`.
 *
 * @example
 * ```ts
 * problemText('KIT_ERR_AUTOCRUD_VERSION_CONFLICT', 'stale', { entity: 'Product', currentVersion: 4 });
 * ```
 */
export function problemText<C extends AnsweredCode>(
  code: C,
  variant: keyof ProblemsOf<C> & string,
  values?: Readonly<Record<string, string | number>>,
): string {
  const texts = (
    autoCrudErrors.codes[code] as { readonly problem: Readonly<Record<string, string>> }
  ).problem;
  return fillProblem(texts[variant] as string, values);
}

/**
 * What is wrong with a parameter of a request (`errors[].detail` of a 400): one of
 * `KIT_ERR_AUTOCRUD_INVALID_PARAMETER`'s texts, filled.
 *
 * @example
 * ```ts
 * parameterText('twice', { name: 'price' });   // 'names price twice'
 * ```
 */
export function parameterText(
  variant: keyof ProblemsOf<'KIT_ERR_AUTOCRUD_INVALID_PARAMETER'> & string,
  values?: Readonly<Record<string, string | number>>,
): string {
  return problemText('KIT_ERR_AUTOCRUD_INVALID_PARAMETER', variant, values);
}

/**
 * The entity a generated route answers for, as much of it as a problem names: structural, so that
 * the errors below the routes need not know the entity's module.
 *
 * @example
 * ```ts
 * const subject: ProblemSubject = { name: 'Product', primaryKey: 'id', fields: [{ name: 'sku', column: 'sku' }] };
 * ```
 */
export interface ProblemSubject {
  readonly name: string;
  readonly primaryKey: string;
  readonly fields: readonly { readonly name: string; readonly column: string }[];
}

/**
 * One parameter at fault (a body field unless `in` says otherwise), as a problem's `errors`
 * lists it (the routes add its JSON pointer).
 *
 * @example
 * ```ts
 * const fault: FieldFault = { name: 'sku', detail: 'is taken by another row' };
 * ```
 */
export interface FieldFault {
  /** Where the parameter is; `body` when absent. */
  readonly in?: 'querystring' | 'params' | 'headers' | 'body';
  readonly name: string;
  readonly detail: string;
  /**
   * Where inside the parameter's value the fault is, as a JSON Pointer (`/dims/x` inside a JSON
   * field); the answer's pointer is the parameter's followed by it. Absent for the whole value.
   */
  readonly path?: string;
}

/**
 * How an error answers a request of a generated route: its status and problem-details `detail`,
 * the body fields at fault, further members, headers, and whether it is logged. The routes' one
 * error handler renders it; nothing else states an error's status. Without `detail`, the answer
 * has no body (a client that went away).
 *
 * @example
 * ```ts
 * const shape: ProblemShape = { status: 503, detail: 'The database is unavailable; try again later.', headers: { 'retry-after': '5' } };
 * ```
 */
export interface ProblemShape {
  readonly status: number;
  readonly detail?: string;
  readonly errors?: readonly FieldFault[];
  readonly members?: Readonly<Record<string, unknown>>;
  readonly headers?: Readonly<Record<string, string>>;
  /** Logged with the error at this level and message before the answer. */
  readonly log?: { readonly level: 'error' | 'debug'; readonly message: string };
}

/**
 * The row of a batch a problem is about: its path as the client wrote it (`[3]`, `lines[3]`), and
 * how the detail names it (`Row [3]`, `Row [3] (Product id 5)`).
 *
 * @example
 * ```ts
 * const row: BatchRow = { index: 3, relation: undefined, path: '[3]', which: 'Row [3]', entity: product };
 * ```
 */
export interface BatchRow {
  readonly index: number;
  readonly relation: string | undefined;
  readonly path: string;
  readonly which: string;
  /** The entity the row is of (a child's, for a nested create). */
  readonly entity: ProblemSubject;
}

/**
 * An error that knows how a generated route answers it: the routes' error handler asks
 * `problem(subject)` and renders the shape, and a batch asks `rowProblem(row)` for the row that
 * failed it. Each of the mapper's errors is one, as each of Fastify's error constructors carries
 * its status and template.
 *
 * @example
 * ```ts
 * if (isAnswerable(err)) console.log(err.problem({ name: 'Product', primaryKey: 'id', fields: [] }).status);
 * ```
 */
export interface Answerable {
  /** The status the routes answer, as the catalogue declares it for the error's code. */
  readonly httpStatus: number;
  problem(subject: ProblemSubject): ProblemShape;
  /** How the error answers when it failed one row of a batch; `undefined`: the routes' handler answers it as it stands. */
  rowProblem?(row: BatchRow): ProblemShape | undefined;
}

/**
 * True when `error` says how the routes answer it ({@link Answerable}).
 *
 * @example
 * ```ts
 * if (isAnswerable(err)) reply.code(err.httpStatus);
 * ```
 */
export function isAnswerable(error: unknown): error is Answerable {
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { problem?: unknown }).problem === 'function' &&
    typeof (error as { httpStatus?: unknown }).httpStatus === 'number'
  );
}

/** The codes the catalogue gives an HTTP status. */
type StatusCode = {
  [C in keyof Codes]: Codes[C] extends { readonly status: number } ? C : never;
}[keyof Codes];

/**
 * The HTTP status the catalogue declares for `code`.
 *
 * @example
 * ```ts
 * statusOf('KIT_ERR_DATABASE_TIMEOUT');   // 504
 * ```
 */
export function statusOf(code: StatusCode): number {
  return (autoCrudErrors.codes[code] as { readonly status: number }).status;
}

/** What an answer adds to its status and detail. */
type ShapeExtras = Omit<ProblemShape, 'status' | 'detail'>;

/**
 * The one base of the errors that answer a generated route: a {@link KitError} whose code has a
 * status and problem texts in the catalogue. Its status is read from the catalogue, and the two
 * shapes every such error answers with (the whole request's, one row's of a batch) are built here
 * once, so a subclass says only which text it answers with and what it adds.
 *
 * @example
 * ```ts
 * class NotReadyError extends AnswerableError<'KIT_ERR_AUTOCRUD_SCHEMA'> {
 *   constructor() { super('KIT_ERR_AUTOCRUD_SCHEMA', 'a table is missing'); }
 *   problem(): ProblemShape { return this.answer('notReady'); }
 * }
 * ```
 */
export abstract class AnswerableError<C extends AnsweredCode & StatusCode>
  extends KitError
  implements Answerable
{
  // Kept apart from `code` (typed as every Kit code, as hosts compare it) to type the texts.
  readonly #answered: C;

  constructor(code: C, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.#answered = code;
  }

  /** The status the routes answer, as the catalogue declares it for the error's code. */
  get httpStatus(): number {
    return statusOf(this.#answered);
  }

  abstract problem(subject: ProblemSubject): ProblemShape;

  /** One of the code's problem texts, filled. */
  protected text(
    variant: keyof ProblemsOf<C> & string,
    values?: Readonly<Record<string, string | number>>,
  ): string {
    return problemText(this.#answered, variant, values);
  }

  /** The answer of the whole request: the status, the text `variant` filled, and `extras`. */
  protected answer(
    variant: keyof ProblemsOf<C> & string,
    values?: Readonly<Record<string, string | number>>,
    extras?: ShapeExtras,
  ): ProblemShape {
    return { status: this.httpStatus, detail: this.text(variant, values), ...extras };
  }

  /** The answer about one row of a batch: the row named in the detail and as the one field at fault. */
  protected rowAnswer(
    row: BatchRow,
    detail: string,
    members?: Readonly<Record<string, unknown>>,
  ): ProblemShape {
    return {
      status: this.httpStatus,
      detail: fillProblem(routeProblems.rowFault, { row: row.which, detail }),
      errors: [{ name: row.path, detail }],
      ...(members ? { members } : {}),
    };
  }
}
