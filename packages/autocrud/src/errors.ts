// @kit/autocrud's error catalogue: the codes it adds, and the core codes it throws too. The table
// in docs/autocrud.md ("Errors") is generated from it (docs/test/error-catalogue.test.ts). A code
// the generated routes answer also holds the problem texts of those answers (`problem`, filled by
// answers.ts), and routeProblems holds the answers no code stands for: every text a client reads.
//
// Two prefixes, on purpose: KIT_ERR_DATABASE_* say what the database did or could not do with a
// statement (unreachable, no free connection, too slow, a constraint, a value it refused); they
// are conditions of the database, which any Kit package that runs statements reports the same way.
// KIT_ERR_AUTOCRUD_* say that one of AutoCrud's own rules was broken: an entity definition, the
// order of start-up calls, an engine that cannot start, tables that do not fit the entities, a
// row's version. Existing codes keep their spelling: hosts match on them.
import { coreErrors } from '@kit/core';
import { errorCatalogue } from '@kit/core/extend';

/**
 * Every error code of `@kit/autocrud`: its own, and the ones of `@kit/core` it throws for the
 * same reasons. `status` is what the generated routes answer.
 *
 * @example
 * ```ts
 * if (err instanceof KitError && autoCrudErrors.codes[err.code as keyof typeof autoCrudErrors.codes]?.status === 503) retryLater();
 * ```
 */
export const autoCrudErrors = errorCatalogue({
  // What the database did.
  KIT_ERR_DATABASE_UNAVAILABLE: {
    status: 503,
    message:
      'The database is unavailable ({reason}); the query was not run. It is retried on the next call.',
    when: 'a repository call while the database cannot be reached or is still starting; `DatabaseUnavailableError` (routes: 503 with `Retry-After`)',
    problem: {
      unavailable: 'The database is unavailable; try again later.',
      lost: 'The database connection was lost while the request ran; a write may or may not have been applied. Try again in a moment.',
    },
  },
  KIT_ERR_DATABASE_BUSY: {
    status: 503,
    message:
      'No database connection became free within {waitedMs} ms (acquireTimeoutMs); the query was not run. Retry shortly, or raise poolSize.',
    when: 'no connection became free within `acquireTimeoutMs`: the database is up, only saturated; `DatabaseBusyError` (routes: 503 with `Retry-After: 1`)',
    problem: {
      busy: 'The database is busy (no connection became free in time); nothing was done. Try again in a moment.',
    },
  },
  KIT_ERR_DATABASE_TIMEOUT: {
    status: 504,
    message:
      'The statement ran longer than {limitMs} ms (statementTimeoutMs) and was cancelled; nothing of it was written.',
    when: 'a statement ran past `statementTimeoutMs` and was cancelled; `StatementTimeoutError`',
    problem: {
      timeout:
        'The database did not complete the request in time; it was cancelled and nothing of it was written.',
    },
  },
  KIT_ERR_DATABASE_CONFLICT: {
    status: 409,
    when: 'a write refused by a unique or foreign-key constraint; `ConstraintViolationError`',
    problem: {
      taken: 'A {entity} with this {fields} already exists ({rule}); nothing was written.',
      unique: 'The {entity} conflicts with an existing one (a unique value is taken).',
      foreignKey: 'The {entity} conflicts with related data.',
      rowTaken: 'conflicts with an existing row: its {fields} {verb} taken ({rule})',
      rowUnique: 'conflicts with an existing row (a unique value is taken)',
      rowForeignKey: 'refers to a row that does not exist (a {entity} field names a missing row)',
      fieldTaken: 'is taken by another row',
    },
  },
  KIT_ERR_DATABASE_INVALID_VALUE: {
    status: 400,
    message:
      'The database refused a value: out of range for its column, or against a NOT NULL or CHECK constraint.',
    when: 'a write refused for a value out of range, or against a NOT NULL or CHECK constraint; `InvalidValueError`',
    problem: {
      invalid:
        'A value cannot be stored in the {entity}: out of range for its column or against a database constraint.',
      row: 'holds a value that cannot be stored: out of range for its column or against a database constraint',
    },
  },
  // AutoCrud's own rules.
  KIT_ERR_AUTOCRUD_VERSION_CONFLICT: {
    status: 412,
    message:
      'The row is at version {currentVersion}, not the one the write was conditioned on; nothing was written. Read it again and retry.',
    when: 'a conditional write (`ifVersion`, `If-Match`) found the row at another version; `VersionConflictError`',
    problem: {
      stale:
        'The {entity} changed since it was read: it is at version {currentVersion} now, and nothing was written. Read it again and retry with its ETag.',
      row: 'changed since it was read: it is at version {currentVersion} now',
      rowAdvice:
        '{row} {detail}, and nothing was written. Read it again and retry with its version.',
    },
  },
  KIT_ERR_AUTOCRUD_NO_ETAG: {
    status: 412,
    when: '`If-Match` naming a version, on a write to an entity without a version field: its rows have no ETag, so no tag can match (`If-Match: *` still does)',
    problem: {
      noEtag: '{entity} rows have no ETag, so If-Match cannot match; nothing was written.',
    },
  },
  KIT_ERR_AUTOCRUD_NOT_FOUND: {
    status: 404,
    when: "a route by key, or a row of a bulk PATCH, names a key with no row (none, soft-deleted, or outside the caller's scope)",
    problem: {
      missing: 'No {entity} with {pk} {key}.',
      row: 'does not exist (or is deleted)',
    },
  },
  KIT_ERR_AUTOCRUD_PRECONDITION_REQUIRED: {
    status: 428,
    when: 'under `requireIfMatch`, a `PUT`, `PATCH` or `DELETE` without `If-Match`, or a row of a bulk PATCH without its version',
    problem: {
      ifMatch:
        "Writes to {entity} need If-Match: send the ETag of the row as read (GET answers it), so that no one else's write is overwritten.",
      rowVersion:
        'Row {row} has no {version}: writes to {entity} must say which version they change (the version read, as If-Match would). Nothing was written.',
    },
  },
  KIT_ERR_AUTOCRUD_MISSING_REFERENCE: {
    status: 422,
    message:
      '{entity}.{field} names {target} {key}, which does not exist (or is deleted); nothing was written.',
    when: 'a write names, in a field that references another entity, a row that does not exist or is soft-deleted; `MissingReferenceError`',
    problem: { missing: 'names {target} {key}, which does not exist' },
  },
  KIT_ERR_AUTOCRUD_STILL_REFERENCED: {
    status: 409,
    message:
      '{entity} {key} is still referred to by {referrer} {referrerKey} (field {field}); nothing was deleted. Delete or move those rows first, or declare onDelete: cascade or set null.',
    when: "a delete of a row other rows still refer to, under `onDelete: 'restrict'` (the default); `StillReferencedError`",
    problem: {
      referred:
        "{entity} {key} is still referred to by {referrer} {referrerKey} (field '{field}'); nothing was deleted. Delete those rows first.",
    },
  },
  KIT_ERR_AUTOCRUD_INVALID_PARAMETER: {
    status: 400,
    when: 'a query parameter, path parameter, header or body field of a generated route that its schema or its entity refuses (the answer names it in `errors`)',
    problem: {
      fault: '{subject} {detail}.',
      body: 'The body',
      named: "{where} '{name}'",
      // What is wrong with the parameter, as `errors[].detail` says it.
      invalid: 'is not valid',
      required: 'is required',
      notNullable: 'cannot be null: the field is not nullable',
      /** A parameter naming a field the entity does not have (or hides from the caller). */
      noSuchField: 'names no field of {entity}; fields: {fields}',
      hiddenField: 'names no field of {entity}: {name}; fields: {fields}',
      notAField: 'is not a field of {entity}',
      notAFieldNamed: 'names {name}, which is not a field of {entity}; fields: {fields}',
      twice: 'names {name} twice',
      sortFields:
        'must list sortable fields of {entity} ({fields}), comma-separated, each optionally prefixed with -',
      jsonSort:
        'names {name}, a JSON field, which has no order; sortable fields of {entity}: {fields}',
      fieldList: 'must list fields of {entity} ({fields}), comma-separated, each at most once',
      atMostOf: 'must list at most {max} of: {allowed}',
      needsInclude: 'needs include={path}',
      eachValue: 'holds {item}: each value {detail}',
      pageWithAfter: 'cannot be combined with after: a cursor page starts where the cursor points',
      notACursor:
        'is not a cursor this list issued for this query: pass the `next` of the previous page unchanged, with the same sort and filters',
      notAHistoryCursor:
        'is not a cursor this history issued for this row: pass the `next` of the previous page unchanged',
      ifMatchFormat: 'must be * or a comma-separated list of entity-tags ("3", W/"3")',
      batchSize: 'must hold 1 to {max} rows',
      noCaller:
        "cannot be honoured: the bearer token names no caller (no sub, azp or client_id claim), so its key could replay another client's answer. Send the request without the header, or with a token that names its subject or client",
      upsertKey:
        'is required for an upsert: it is part of the unique key ({key}) rows are matched on',
      noUniqueKey:
        'asks for {token}, but {entity} declares no unique key to match rows on (defineEntity({ unique: [[...]] })); nothing was written',
      nestedUpsert:
        'asks for {token}, which does not apply to a create that carries {relations} (a nested create only creates); nothing was written',
      mustBe: 'must be {types}',
      readOnlyField: 'is read-only',
      atMostCharacters: 'must be at most {limit} characters',
      valueList: 'must be a comma-separated list of 1 to {max} {kind} values{length}',
      valueLength: ' of at most {max} characters',
      notAnAlternative:
        'is not an alternative of the OR group: write filter[or][n][field][operator]=value with n from 0 to {last} (at most {count} alternatives)',
      nestedOr:
        'nests an OR group in an alternative: OR groups do not nest (one level: filter[or][n][field][operator])',
      malformedFilter: 'is malformed: write filter[field]=value or filter[field][operator]=value',
      notAccepted:
        'is not accepted: the list takes page, pageSize, after, count, sort, fields and filter[field][operator]',
      unknownOperator: 'has an unknown operator; operators: {operators}',
      operatorNotFor:
        'uses an operator that does not apply to the {kind} field {field}; it takes {operators}',
      insideJson: 'does not match its schema at {path}: {detail}',
      undeclaredKey: 'is a key its schema does not declare',
      headerValue: 'must be 1 to 255 visible ASCII characters (a UUID, for example)',
      decimalInteger: 'must be a decimal integer (digits and an optional -)',
      decimalNumber: 'must be a decimal number',
      finite: 'must be a finite number',
      notOneOf: 'names {value}, which is not one of: {allowed}',
      anArray: 'must be an array',
      nestedRows: 'must hold at most {max} rows (over all relations of one create)',
      noKeyToName: 'names a unique key, but {entity} declares none; nothing was written',
      upsertOnly:
        'applies to an upsert: send Prefer: resolution=merge-duplicates or resolution=ignore-duplicates with it; nothing was written',
      oneUniqueKey:
        'must name one unique key of {entity}, its fields comma-separated: {keys}; nothing was written',
    },
  },
  KIT_ERR_AUTOCRUD_NOT_JSON: {
    status: 415,
    when: 'a write whose body is not `application/json` (nor a `+json` type)',
    problem: { notJson: 'The body must be application/json.' },
  },
  KIT_ERR_AUTOCRUD_UNAUTHENTICATED: {
    status: 401,
    when: 'under `authorization`, a request without a bearer token when no anonymous rule allows the operation (answered with `WWW-Authenticate: Bearer`)',
    problem: { tokenRequired: 'A bearer token is required.' },
  },
  KIT_ERR_AUTOCRUD_FORBIDDEN: {
    status: 403,
    when: 'under `authorization`, a caller whose roles allow no rule of the operation, whose claims cannot scope it, or whose body writes what the rule does not let it (the answer names the row, relation or include)',
    problem: {
      operation:
        "The token's roles do not allow this caller to {verb} {entity} rows; nothing was read or written.",
      claim:
        "The token's claim {claim} does not say whose {entity} rows the caller may {verb}; nothing was read or written.",
      notThisCaller: 'This caller may not {verb} {entity} rows; nothing was read or written.',
      otherOwner:
        "Body field '{field}' names another {entity} owner than the caller's token; nothing was written.",
      readOnly: "Body field '{field}' may not be written by this caller; nothing was written.",
      within: '{where}: {detail}',
      row: 'Row {row}: {detail}',
    },
  },
  KIT_ERR_AUTOCRUD_IDEMPOTENCY_PENDING: {
    status: 409,
    when: 'a create with an `Idempotency-Key` whose first request still runs (answered with `Retry-After`)',
    problem: {
      pending:
        'A request with this Idempotency-Key is still in progress; nothing was created. Retry after it completes to get its answer.',
    },
  },
  KIT_ERR_AUTOCRUD_IDEMPOTENCY_MISMATCH: {
    status: 422,
    when: 'a create with an `Idempotency-Key` used before for another body',
    problem: {
      mismatch:
        'This Idempotency-Key was used for a {entity} with another body; nothing was created. Use a new key for a new {entity}.',
    },
  },
  KIT_ERR_AUTOCRUD_CLIENT_GONE: {
    status: 499,
    message: 'The client closed the connection before the answer; the statement was cancelled.',
    when: "the client closed the connection before the answer: the route's statement is cancelled, and the 499 (no body) is only for the access log and the audit trail",
    problem: { log: 'AutoCrud: the client went away; its statement was cancelled' },
  },
  KIT_ERR_AUTOCRUD_SCHEMA: {
    status: 503,
    when: 'a table or column is missing or of an incompatible type; `SchemaMismatchError` (fails start-up; later, routes answer 503)',
    problem: {
      notReady: 'The database is not ready for this resource; try again later.',
      log: 'AutoCrud: the database schema does not fit the entities',
    },
  },
  KIT_ERR_AUTOCRUD_ENTITY: {
    when: '`defineEntity`, `@AutoCrud` (Create/Update with no writable field, unknown flags), two entities with one name',
  },
  KIT_ERR_AUTOCRUD_AUTHORIZATION: {
    when: '`@AutoCrud(..., { authorization })` that cannot be enforced as written: an empty rule set, an unknown field or rule option, a malformed claim path, a rule allowing an operation the class does not serve (the message names the option and its value)',
  },
  KIT_ERR_AUTOCRUD_NOT_ADDED: {
    message:
      '{className} is an @AutoCrud class, but no AutoCrud database is registered: call addKitAutoCrud(app, url) between addKit and useKit.{elsewhere}',
    when: 'an `@AutoCrud` class without `addKitAutoCrud` (at `useKit`)',
  },
  KIT_ERR_AUTOCRUD_OUTBOX_OFF: {
    message:
      'onChange({entity}, handler) needs the outbox: pass outbox: true (or its settings) to addKitAutoCrud.',
    when: '`kitAutoCrud.onChange` on an AutoCrud database without `outbox`',
  },
  KIT_ERR_AUTOCRUD_ALREADY_ADDED: {
    message:
      'addKitAutoCrud(app, url) was called twice on the same Fastify instance; one database serves every @AutoCrud class.',
    when: '`addKitAutoCrud` called twice on one instance',
  },
  KIT_ERR_AUTOCRUD_TOO_LATE: {
    message:
      'addKitAutoCrud(app, url) was called after useKit(app) completed; call it between addKit and useKit.',
    when: '`addKitAutoCrud` after `useKit` completed',
  },
  KIT_ERR_AUTOCRUD_SQLITE_UNSUPPORTED: {
    message:
      "addKitAutoCrud(app, '{url}'): the sqlite: engine uses node:sqlite, built into Node >= 22.13 (and 23.4+); this is Node {node}. Run on Node 22.13 or later, or use 'pglite:' (embedded PostgreSQL) or a postgres:// URL.",
    when: '`sqlite:` on a Node without `node:sqlite`',
  },
  KIT_ERR_AUTOCRUD_ENGINE: {
    when: 'PGlite or SQLite cannot open its directory or file (the message names the path and what is wrong)',
  },
  KIT_ERR_AUTOCRUD_LOCKED: {
    when: '`pglite:<dir>` is in use by another process, or by another app of this one (at `useKit`); the message names the directory and the holder',
  },
  KIT_ERR_AUTOCRUD_UNREPRESENTABLE: {
    status: 500,
    when: 'a read whose stored value Kit cannot answer exactly (a `bigint` past 2^53-1, `infinity`, text in another form than Kit writes, JSON text that does not parse); names the entity, field and row; `UnrepresentableValueError`',
    problem: {
      inexact:
        "A stored {entity} value cannot be answered exactly, so nothing was answered; the service's log names it.",
      log: 'AutoCrud: a stored value cannot be answered exactly',
    },
  },
  KIT_ERR_AUTOCRUD_NO_ROW_ANSWERED: {
    message: '{statement} answered no row',
    when: 'a write statement answered no row where it must (an `INSERT … RETURNING`, the `UPDATE` of a row the write holds locked): a fault of the database or its driver, answered as any unexpected error (a logged 500)',
  },
  KIT_ERR_AUTOCRUD_MIGRATION: {
    when: "`writeMigration` refused a destructive change (a drop, a type change, a NOT NULL column without a default; the message lists each and what to do instead) or found migrations not yet applied; at start-up with `migrate: 'apply'`, a migration that failed (rolled back, named with its statement), a migrations directory that cannot be read or does not match the migrations run, or a migration lock not free within `migrationLockTimeoutMs`",
  },
  KIT_ERR_INVALID_ARGUMENT: {
    when: "a repository call whose arguments do not fit the entity: a value of the wrong kind (`5` for a string), outside an enum or a JSON field's schema, `null` for a field that is not nullable, an unknown or read-only input field, an unknown or JSON sort key, an operator the field does not take, `after` of the wrong length, `ifVersion` on an entity without a version field",
  },
  // Core's codes, thrown for the same reasons.
  KIT_ERR_INVALID_OPTION: {
    ...coreErrors.codes.KIT_ERR_INVALID_OPTION,
    when: 'a bad option or connection string (its password redacted)',
  },
  KIT_ERR_NOT_ADDED: {
    ...coreErrors.codes.KIT_ERR_NOT_ADDED,
    when: '`addKitAutoCrud` on an instance without `addKit`',
  },
  KIT_ERR_STORE_UNAVAILABLE: {
    ...coreErrors.codes.KIT_ERR_STORE_UNAVAILABLE,
    when: 'a create with an `Idempotency-Key` while the idempotency store cannot be reached: nothing is created (routes: 503 with `Retry-After`)',
    problem: {
      idempotency:
        'Idempotency-Key cannot be honoured right now (its store is unavailable); nothing was created. Try again later.',
    },
  },
  KIT_ERR_DUPLICATE_HEALTH_CHECK: {
    when: '`addKitAutoCrud` when a check with its `healthCheck.name` (default `database`) is registered already',
  },
});

declare module '@kit/core' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- declaration merging adds this package's codes
  interface KitErrorCodes extends Record<keyof typeof autoCrudErrors.codes, true> {}
}

/**
 * The pieces of text the answers of many codes share (how a row of a batch or a body field is
 * named with what is wrong with it, what a parameter naming no field is told) and the answers of
 * the routes' one error handler that no code stands for (Fastify's own client errors, the 500):
 * kept here beside the codes' own so that every text a client reads is in one file.
 *
 * @example
 * ```ts
 * fillProblem(routeProblems.rowFault, { row: 'Row [3]', detail: 'does not exist' });   // 'Row [3] does not exist; nothing was written.'
 * ```
 */
export const routeProblems = {
  /** A row of a batch, and what is wrong with it. */
  rowFault: '{row} {detail}; nothing was written.',
  /** A body field, and what is wrong with it. */
  fieldFault: "Body field '{field}' {detail}; nothing was written.",
  serverError: 'The request could not be completed.',
  /** Fastify's own client errors: a body that does not parse, or is too large. */
  bodyInvalidJson: 'The body is not valid JSON.',
  bodyTooLarge: 'The body is too large.',
  clientError: 'The request is not valid.',
} as const;

/** `Retry-After` of a 503 while the database is unavailable, in seconds. */
export const RETRY_AFTER_SECONDS = 5;
/** `Retry-After` of a 503 while the database is busy (no free connection), or one connection broke: it frees up in moments. */
export const BUSY_RETRY_AFTER_SECONDS = 1;
