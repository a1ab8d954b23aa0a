// The outbox writer, a layer on the read/write seam (seam/hooks.ts): a write hook that writes one
// `kit_outbox` record per changed row, inside the write's transaction, so that a record exists exactly when its write committed.
// The dispatcher (../outbox/) delivers the records afterwards, off the request path. Its SQL form
// asks the dialect's change SQL (`SqlDialect.changeSql`) for every engine-specific function and
// cast: the only SQL spelled here is the standard concatenation the payload's JSON text is built of.
import { randomUUID } from 'node:crypto';
import { OUTBOX_TABLE } from './outbox-table.js';
import { sql, type Expression } from 'kysely';
import type {
  ChangeContext,
  ChangeRecord,
  ChangeSink,
  ChangeSinkSql,
  ChangeTransaction,
} from '../seam/changes.js';
import type { SeamLayer } from '../seam/hooks.js';
import type { InlineChangeSql } from '../sql/change-sql.js';
import type { SqlDialect } from '../sql/dialect.js';
import { Slot, statement, type Statement } from '../sql/statements.js';

/**
 * What a record carries of the row's values (the payload column, as JSON).
 *
 * @example
 * ```ts
 * const payload: OutboxPayload = { changed: ['price'], before: { price: 40 }, after: { price: 35 } };
 * ```
 */
export interface OutboxPayload {
  /** The fields that changed (update, patch, soft delete); absent for create and delete, which carry the whole row. */
  readonly changed?: readonly string[];
  /** The row before: whole for delete, the changed fields for update/patch/softDelete. */
  readonly before?: Readonly<Record<string, unknown>>;
  /** The row after: whole for create, the changed fields for update/patch/softDelete. */
  readonly after?: Readonly<Record<string, unknown>>;
  /** Sensitive fields of the entity that are part of the change, carried by name only (never their values). */
  readonly redacted?: readonly string[];
}

/** Rows per INSERT: 11 parameters each, far below every engine's limit (bulk-insert.ts). */
const ROWS_PER_STATEMENT = 500;

function same(a: unknown, b: unknown): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

/** The payload of one change: values in Kit's form, sensitive ones left out (named in `redacted`). */
function outboxPayload(change: ChangeRecord, sensitive: ReadonlySet<string>): OutboxPayload {
  const { before, after } = change;
  const redacted = new Set<string>();
  const pick = (
    row: Readonly<Record<string, unknown>> | undefined,
    fields: Iterable<string>,
  ): Record<string, unknown> | undefined => {
    if (!row) return undefined;
    const out: Record<string, unknown> = {};
    for (const field of fields) {
      if (!(field in row)) continue;
      if (sensitive.has(field)) redacted.add(field);
      else out[field] = row[field];
    }
    return out;
  };
  let payload: OutboxPayload;
  if (change.operation === 'create' || (before === undefined && after !== undefined)) {
    payload = { after: pick(after, Object.keys(after ?? {})) };
  } else if (change.operation === 'delete' || after === undefined) {
    payload = { before: pick(before, Object.keys(before ?? {})) };
  } else {
    const changed = [...new Set([...Object.keys(before ?? {}), ...Object.keys(after)])].filter(
      (f) => !same(before?.[f], after[f]),
    );
    payload = { changed, before: pick(before, changed), after: pick(after, changed) };
  }
  return redacted.size > 0 ? { ...payload, redacted: [...redacted] } : payload;
}

/**
 * The outbox's change sink. `sensitive(entity)` names the fields of an entity whose values never
 * leave the database in a record (the entity's `redact`). On a dialect that writes a single
 * write's changes inside its statement (`changeSql`), the sink carries its SQL form.
 *
 * @example
 * ```ts
 * hooks.add({ write: outboxSink((entity) => new Set(['password']), dialect) });
 * ```
 */
export function outboxSink(
  sensitive: (entity: string) => ReadonlySet<string>,
  dialect: SqlDialect,
): ChangeSink {
  // The one-row insert (a single write's), compiled once: the record costs its statement, not a build.
  let single: Statement | undefined;
  const sink = async (
    tx: ChangeTransaction,
    changes: readonly ChangeRecord[],
    context: ChangeContext,
  ): Promise<void> => {
    if (changes.length === 1) {
      const row = outboxRow(
        changes[0] as ChangeRecord,
        context,
        sensitive((changes[0] as ChangeRecord).entity),
      );
      single ??= statement(
        tx.db
          .insertInto(OUTBOX_TABLE)
          .values(Object.fromEntries(Object.keys(row).map((c) => [c, new Slot(c)]))),
      );
      await tx.execute(single.bind(row), single.name);
      return;
    }
    for (let i = 0; i < changes.length; i += ROWS_PER_STATEMENT) {
      const rows = changes
        .slice(i, i + ROWS_PER_STATEMENT)
        .map((change) => outboxRow(change, context, sensitive(change.entity)));
      await tx.execute(tx.db.insertInto(OUTBOX_TABLE).values(rows).compile(), '');
    }
  };
  const forms = dialect.changeSql;
  return forms ? Object.assign(sink, { sql: outboxSql(sensitive, forms) }) : sink;
}

const NONE: ReadonlySet<string> = new Set();

/**
 * The outbox as a layer on the seam: its write hook on every entity but Kit's own tables, each
 * entity's `redact` kept out of its records.
 *
 * @example
 * ```ts
 * database.use(outboxLayer());
 * ```
 */
export function outboxLayer(): SeamLayer {
  const redacted = new Map<string, ReadonlySet<string>>();
  const sensitive = (entity: string) => redacted.get(entity) ?? NONE;
  // One sink per dialect (a database has one), so its one-row statement is compiled once.
  const sinks = new Map<SqlDialect, ChangeSink>();
  return {
    attach({ entity, hooks, own, dialect }) {
      if (own) return;
      redacted.set(entity.name, new Set(entity.redact));
      let sink = sinks.get(dialect);
      if (!sink) sinks.set(dialect, (sink = outboxSink(sensitive, dialect)));
      hooks.add({ write: sink });
    },
  };
}

/**
 * The outbox sink's SQL form: the record `outboxRow` makes, as expressions over the change (see
 * changes.ts `ChangeSql`), its payload's JSON text written in the order `outboxPayload` writes it.
 */
function outboxSql(
  sensitive: (entity: string) => ReadonlySet<string>,
  forms: InlineChangeSql,
): ChangeSinkSql {
  return {
    table: OUTBOX_TABLE,
    columns: (c) => {
      const secret = sensitive(c.entity);
      const kept = c.fields.filter((f) => !secret.has(f));
      const hidden = c.fields.filter((f) => secret.has(f));
      let payload: Expression<string>;
      let redacted: Expression<string[]>;
      if (c.operation === 'create' || c.operation === 'delete') {
        const which = c.operation === 'create' ? 'after' : 'before';
        payload = sql<string>`${c.text(`{"${which}":`)} || ${c.object(which, kept)}`;
        redacted = c.changed(hidden);
      } else {
        const only = { names: c.fields, order: 'before-first' } as const;
        payload = sql<string>`'{"changed":' || ${forms.listText(c.changed(c.fields, 'before-first'))} || ',"before":' || ${c.object('before', kept, only)} || ',"after":' || ${c.object('after', kept, only)}`;
        redacted = c.changed(hidden, 'before-first');
      }
      return {
        id: forms.uuid(),
        entity: c.text(c.entity),
        row_key: c.keyJson,
        operation: c.text(c.operation),
        version_before: c.versionBefore,
        version_after: c.versionAfter,
        // `redacted` only when a sensitive field is part of the change, as outboxPayload leaves it out.
        payload: sql`(${payload} || case when ${forms.nonEmpty(redacted)} then ',"redacted":' || ${forms.listText(redacted)} else '' end || '}')`,
        correlation_id: forms.text(c.bind('correlation', (ctx) => ctx.correlationId)),
        subject: forms.text(c.bind('subject', (ctx) => ctx.subject)),
        trace_id: forms.text(c.bind('trace', (ctx) => ctx.traceId)),
      };
    },
  };
}

function outboxRow(
  change: ChangeRecord,
  context: ChangeContext,
  sensitive: ReadonlySet<string>,
): Record<string, unknown> {
  return {
    id: randomUUID(),
    entity: change.entity,
    row_key: JSON.stringify(change.key),
    operation: change.operation,
    version_before: change.versionBefore ?? null,
    version_after: change.versionAfter ?? null,
    payload: JSON.stringify(outboxPayload(change, sensitive)),
    correlation_id: context.correlationId ?? null,
    subject: context.subject ?? null,
    trace_id: context.traceId ?? null,
  };
}
