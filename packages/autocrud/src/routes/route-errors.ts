// The errors the routes raise themselves, for the answers no call of the mapper fails with: a key
// with no row, a write without If-Match, a parameter or body at fault, a caller refused, the
// idempotency store's refusals. Each carries its code, and from the catalogue (../errors.ts) its
// status and problem texts, as the mapper's errors do: a route answers one with `answer(reply,
// error)` (problems.ts) or throws it to the routes' error handler, and no route states a status.
import { autoCrudErrors, RETRY_AFTER_SECONDS } from '../errors.js';
import {
  AnswerableError,
  problemText,
  type BatchRow,
  type FieldFault,
  type ProblemShape,
} from '../answers.js';

/**
 * A key names no row (none, soft-deleted, or outside the caller's scope): 404.
 *
 * @example
 * ```ts
 * answer(reply, new NotFoundError('Product', 'id', 7));   // 404 'No Product with id 7.'
 * ```
 */
export class NotFoundError extends AnswerableError<'KIT_ERR_AUTOCRUD_NOT_FOUND'> {
  readonly #values: Readonly<Record<string, string>>;

  constructor(entity: string, primaryKey: string, key: unknown) {
    const values = { entity, pk: primaryKey, key: JSON.stringify(key) };
    super(
      'KIT_ERR_AUTOCRUD_NOT_FOUND',
      problemText('KIT_ERR_AUTOCRUD_NOT_FOUND', 'missing', values),
    );
    this.#values = values;
  }

  /** The 404 naming the entity and the key. */
  problem(): ProblemShape {
    return this.answer('missing', this.#values);
  }

  /** The 404 naming the row of a batch that does not exist. */
  rowProblem(row: BatchRow): ProblemShape {
    return this.rowAnswer(row, this.text('row'));
  }
}

/**
 * A write that must say which version it changes did not (`requireIfMatch`): 428. Without `row`,
 * the request has no `If-Match`; with it, that row of a bulk PATCH has no version field.
 *
 * @example
 * ```ts
 * answer(reply, new PreconditionRequiredError('Product'));
 * ```
 */
export class PreconditionRequiredError extends AnswerableError<'KIT_ERR_AUTOCRUD_PRECONDITION_REQUIRED'> {
  readonly #shape: ProblemShape;

  constructor(entity: string, row?: { readonly path: string; readonly version: string }) {
    const code = 'KIT_ERR_AUTOCRUD_PRECONDITION_REQUIRED';
    const detail = row
      ? problemText(code, 'rowVersion', { row: row.path, version: row.version, entity })
      : problemText(code, 'ifMatch', { entity });
    super(code, detail);
    this.#shape = { status: this.httpStatus, detail };
  }

  /** The 428 saying what the write must send. */
  problem(): ProblemShape {
    return this.#shape;
  }
}

/**
 * `If-Match` on an entity without a version field: its rows have no ETag, so no tag matches and
 * the write is refused as a stale one is (412).
 *
 * @example
 * ```ts
 * answer(reply, new NoEtagError('Tag'));   // 412 'Tag rows have no ETag, so If-Match cannot match; …'
 * ```
 */
export class NoEtagError extends AnswerableError<'KIT_ERR_AUTOCRUD_NO_ETAG'> {
  constructor(readonly entity: string) {
    super(
      'KIT_ERR_AUTOCRUD_NO_ETAG',
      problemText('KIT_ERR_AUTOCRUD_NO_ETAG', 'noEtag', { entity }),
    );
  }

  /** The 412 saying that no tag can match. */
  problem(): ProblemShape {
    return this.answer('noEtag', { entity: this.entity });
  }
}

/** Where a parameter at fault is, as the 400 names it. */
const WHERE: Readonly<Record<NonNullable<FieldFault['in']>, string>> = {
  querystring: 'Query parameter',
  params: 'Path parameter',
  headers: 'Header',
  body: 'Body field',
};

/**
 * One parameter of a request at fault (a query or path parameter, a header, a body field, or the
 * body as a whole when its name is `''`): 400 naming it, as `errors` lists it too.
 *
 * @example
 * ```ts
 * answer(reply, new InvalidParameterError({ in: 'querystring', name: 'pageSize', detail: 'must be an integer' }));
 * ```
 */
export class InvalidParameterError extends AnswerableError<'KIT_ERR_AUTOCRUD_INVALID_PARAMETER'> {
  readonly #shape: ProblemShape;

  constructor(fault: FieldFault & { readonly in: NonNullable<FieldFault['in']> }) {
    const code = 'KIT_ERR_AUTOCRUD_INVALID_PARAMETER';
    const subject =
      fault.in === 'body' && fault.name === ''
        ? problemText(code, 'body')
        : problemText(code, 'named', { where: WHERE[fault.in], name: fault.name });
    const detail = problemText(code, 'fault', { subject, detail: fault.detail });
    super(code, detail);
    this.#shape = {
      status: this.httpStatus,
      detail,
      errors: [
        {
          in: fault.in,
          name: fault.name,
          detail: fault.detail,
          ...(fault.path === undefined ? {} : { path: fault.path }),
        },
      ],
    };
  }

  /** The 400 naming the parameter: `Query parameter 'pageSize' must be an integer.` */
  problem(): ProblemShape {
    return this.#shape;
  }
}

/**
 * A write's body is not `application/json` (Fastify would parse `text/plain` itself): 415.
 *
 * @example
 * ```ts
 * answer(reply, new NotJsonError());
 * ```
 */
export class NotJsonError extends AnswerableError<'KIT_ERR_AUTOCRUD_NOT_JSON'> {
  constructor() {
    super('KIT_ERR_AUTOCRUD_NOT_JSON', problemText('KIT_ERR_AUTOCRUD_NOT_JSON', 'notJson'));
  }

  /** The 415 saying which media type a body must be. */
  problem(): ProblemShape {
    return this.answer('notJson');
  }
}

/**
 * No bearer token, and no anonymous rule allows the operation: 401 with the bare challenge, as
 * `app.kitAuthenticate` answers.
 *
 * @example
 * ```ts
 * answer(reply, new TokenRequiredError());
 * ```
 */
export class TokenRequiredError extends AnswerableError<'KIT_ERR_AUTOCRUD_UNAUTHENTICATED'> {
  constructor() {
    super(
      'KIT_ERR_AUTOCRUD_UNAUTHENTICATED',
      problemText('KIT_ERR_AUTOCRUD_UNAUTHENTICATED', 'tokenRequired'),
    );
  }

  /** The 401 with `WWW-Authenticate: Bearer`. */
  problem(): ProblemShape {
    return this.answer('tokenRequired', undefined, { headers: { 'www-authenticate': 'Bearer' } });
  }

  /** The same refusal: a missing token is not about one part of the request. */
  within(): TokenRequiredError {
    return this;
  }
}

/**
 * The caller's token does not let it do what it asks (its roles allow no rule of the operation,
 * its claims cannot scope it, its body writes what the rule does not let it): 403 with `detail`.
 *
 * @example
 * ```ts
 * answer(reply, ForbiddenError.operation('delete', 'Order').within('lines'));
 * ```
 */
export class ForbiddenError extends AnswerableError<'KIT_ERR_AUTOCRUD_FORBIDDEN'> {
  constructor(readonly detail: string) {
    super('KIT_ERR_AUTOCRUD_FORBIDDEN', detail);
  }

  /** The caller's roles allow no rule of the operation (`verb`: list, read, create, …) on `entity`. */
  static operation(verb: string, entity: string): ForbiddenError {
    return new ForbiddenError(
      problemText('KIT_ERR_AUTOCRUD_FORBIDDEN', 'operation', { verb, entity }),
    );
  }

  /** The refusal of one row of a many-row body (`[3]`); the body itself when `row` is `''`. */
  static ofRow(row: string, detail: string): ForbiddenError {
    return new ForbiddenError(
      row === '' ? detail : problemText('KIT_ERR_AUTOCRUD_FORBIDDEN', 'row', { row, detail }),
    );
  }

  /** The same refusal, about one part of the request (`include=lines`, a relation `lines[2]`). */
  within(where: string): ForbiddenError {
    return new ForbiddenError(
      problemText('KIT_ERR_AUTOCRUD_FORBIDDEN', 'within', { where, detail: this.detail }),
    );
  }

  /** The 403 with the refusal's detail. */
  problem(): ProblemShape {
    return { status: this.httpStatus, detail: this.detail };
  }
}

/**
 * Why a create with an `Idempotency-Key` was not run: its store cannot be reached (503), its
 * first request still runs (409), or the key was used for another body (422). Each answers with
 * the `Retry-After` a client should wait, where one helps.
 *
 * @example
 * ```ts
 * answer(reply, new IdempotencyError('pending', 'Order', { retryAfterMs: 1500 }));
 * ```
 */
export class IdempotencyError extends AnswerableError<
  | 'KIT_ERR_STORE_UNAVAILABLE'
  | 'KIT_ERR_AUTOCRUD_IDEMPOTENCY_PENDING'
  | 'KIT_ERR_AUTOCRUD_IDEMPOTENCY_MISMATCH'
> {
  readonly #shape: Omit<ProblemShape, 'status'>;

  constructor(
    outcome: 'unavailable' | 'pending' | 'mismatch',
    entity: string,
    options?: { readonly retryAfterMs?: number; readonly cause?: unknown },
  ) {
    const [code, detail, headers] =
      outcome === 'unavailable'
        ? ([
            'KIT_ERR_STORE_UNAVAILABLE',
            problemText('KIT_ERR_STORE_UNAVAILABLE', 'idempotency'),
            { 'retry-after': String(RETRY_AFTER_SECONDS) },
          ] as const)
        : outcome === 'pending'
          ? ([
              'KIT_ERR_AUTOCRUD_IDEMPOTENCY_PENDING',
              problemText('KIT_ERR_AUTOCRUD_IDEMPOTENCY_PENDING', 'pending'),
              // Whole seconds, at least one: the header counts seconds.
              {
                'retry-after': String(Math.max(1, Math.ceil((options?.retryAfterMs ?? 0) / 1000))),
              },
            ] as const)
          : ([
              'KIT_ERR_AUTOCRUD_IDEMPOTENCY_MISMATCH',
              problemText('KIT_ERR_AUTOCRUD_IDEMPOTENCY_MISMATCH', 'mismatch', { entity }),
              undefined,
            ] as const);
    super(code, detail, options?.cause === undefined ? undefined : { cause: options.cause });
    this.#shape = headers ? { detail, headers } : { detail };
  }

  /** The 503, 409 or 422, with `Retry-After` where waiting helps. */
  problem(): ProblemShape {
    return { status: this.httpStatus, ...this.#shape };
  }
}

/**
 * The client closed the connection before the answer: its statement is cancelled and the 499
 * (nginx's "client closed request") is for the access log and the audit trail; nobody reads it.
 *
 * @example
 * ```ts
 * controller.abort(new ClientGoneError());
 * ```
 */
export class ClientGoneError extends AnswerableError<'KIT_ERR_AUTOCRUD_CLIENT_GONE'> {
  constructor() {
    super('KIT_ERR_AUTOCRUD_CLIENT_GONE', autoCrudErrors.message('KIT_ERR_AUTOCRUD_CLIENT_GONE'));
    this.name = 'ClientGoneError';
  }

  /** An answer without a body, logged at debug: nobody is left to read it. */
  problem(): ProblemShape {
    return { status: this.httpStatus, log: { level: 'debug', message: this.text('log') } };
  }
}
