// The change history, a layer on the read/write seam (seam/hooks.ts): one row in `kit_changes` per
// row a write changed, written by a write hook inside the write's transaction. The history table is itself an entity, so that
// `createTables`, the start-up schema check and `writeMigration` treat it as any other table, and
// its reads are a repository's keyset lists. Knows nothing of HTTP. See docs/decisions.md
// ("Change history").
import { defineEntity, type Entity } from '../../entity.js';
import type {
  ChangeContext,
  ChangeRecord,
  ChangeSink,
  ChangeSinkSql,
  ChangeTransaction,
} from '../seam/changes.js';
import type { SeamLayer } from '../seam/hooks.js';
import { insertRows } from '../writes/bulk-insert.js';
import type { ColumnCodec } from '../sql/columns.js';
import type { SqlDialect } from '../sql/dialect.js';
import { kitTimestamps } from '../sql/stamps.js';
import { Slot, statement, type Statement } from '../sql/statements.js';
import { declareIndex } from '../schema/tables.js';
import { Table, type PreparedInsert } from '../seam/table.js';
import type { Db } from '../sql/engine.js';
import type { InlineChangeSql } from '../sql/change-sql.js';

/** The history table's name. */
const HISTORY_TABLE = 'kit_changes';

/** Longest subject kept (as the audit entry keeps it): a host's own `request.user` may hold anything. */
const SUBJECT_CAP = 256;

const nullableString = { type: ['string', 'null'] } as const;
const nullableInteger = { type: ['integer', 'null'] } as const;
const nullableObject = { type: ['object', 'null'], additionalProperties: true } as const;

/**
 * The change history's table (`kit_changes`, component `KitChange`) as an entity: what
 * `GET /{pk}/history` answers, field for field. `crud.repository(ChangeHistory)` lists it with
 * filters, sorts and cursors like any entity's rows, across entities and rows. Kit writes it, in
 * each write's transaction; a host reads it (a row written by hand would be a change that never
 * happened).
 *
 * @example
 * ```ts
 * import { ChangeHistory, KIT_AUTOCRUD, type KitAutoCrud } from '@kit/autocrud';
 *
 * const changes = app.kit.services.resolve<KitAutoCrud>(KIT_AUTOCRUD).repository(ChangeHistory);
 * const { rows } = await changes.list({ filters: [{ field: 'entity', op: 'eq', value: 'Product' }], sort: [{ field: 'id', descending: true }], offset: 0, limit: 20, count: false });
 * ```
 */
export const ChangeHistory = defineEntity({
  name: 'KitChange',
  table: HISTORY_TABLE,
  schema: {
    type: 'object',
    required: [
      'id',
      'entity',
      'rowKey',
      'operation',
      'versionBefore',
      'versionAfter',
      'changed',
      'before',
      'after',
      'changedAt',
      'correlationId',
      'subject',
      'traceId',
    ],
    properties: {
      id: { type: 'integer', description: 'The change, in the order changes were written.' },
      entity: { type: 'string', description: 'The entity whose row changed.' },
      rowKey: { type: 'string', description: 'The primary key of the row, as text.' },
      operation: { type: 'string', enum: ['create', 'update', 'patch', 'delete', 'softDelete'] },
      versionBefore: {
        ...nullableInteger,
        description:
          "The row's version before the write (null for a create, or an entity without versions).",
      },
      versionAfter: {
        ...nullableInteger,
        description:
          "The row's version after the write (null for a delete, or an entity without versions).",
      },
      changed: {
        type: 'array',
        items: { type: 'string' },
        description:
          'The fields the write changed (for a create or a delete, every field of the row), redacted ones included.',
      },
      before: {
        ...nullableObject,
        description:
          'The changed fields before the write (the whole row for a delete); redacted fields are left out. Null for a create.',
      },
      after: {
        ...nullableObject,
        description:
          'The changed fields after the write (the whole row for a create); redacted fields are left out. Null for a delete.',
      },
      changedAt: {
        type: 'string',
        format: 'date-time',
        description: "The database's clock when the write's transaction began.",
      },
      correlationId: {
        ...nullableString,
        description:
          "The correlation id of the request that wrote it (its audit entry's); null for writes outside a request.",
      },
      subject: {
        ...nullableString,
        description: 'The authenticated subject (JWT sub) of that request, when there was one.',
      },
      traceId: {
        ...nullableString,
        description: 'The W3C trace id of that request, when tracing was on.',
      },
    },
  } as const,
  writable: [
    'entity',
    'rowKey',
    'operation',
    'versionBefore',
    'versionAfter',
    'changed',
    'before',
    'after',
    'correlationId',
    'subject',
    'traceId',
  ],
  createdAt: 'changedAt',
  columns: {
    rowKey: 'row_key',
    versionBefore: 'version_before',
    versionAfter: 'version_after',
    before: 'before_values',
    after: 'after_values',
    changedAt: 'changed_at',
    correlationId: 'correlation_id',
    traceId: 'trace_id',
  },
});

// A row's changes, newest first, are read by (entity, row_key) in id order.
declareIndex(ChangeHistory, `${HISTORY_TABLE}_row_idx`, ['entity', 'row_key', 'id']);

/** `entities`, with the history table's entity when one of them records its changes (for `writeMigration`). */
export function withHistory(entities: readonly Entity[]): readonly Entity[] {
  return entities.some((e) => e.history) && !entities.includes(ChangeHistory)
    ? [...entities, ChangeHistory]
    : entities;
}

function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The values of `row` Kit records: every field but the redacted ones, of `fields` only when given. */
function recorded(
  row: Readonly<Record<string, unknown>>,
  redact: ReadonlySet<string>,
  fields?: readonly string[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of fields ?? Object.keys(row))
    if (!redact.has(name) && row[name] !== undefined) out[name] = row[name];
  return out;
}

/** One history row (the history entity's input) for one change of `entity`. */
function historyRow(
  entity: Entity,
  redact: ReadonlySet<string>,
  change: ChangeRecord,
  context: ChangeContext,
): Record<string, unknown> {
  let changed: string[];
  let before: Record<string, unknown> | null = null;
  let after: Record<string, unknown> | null = null;
  if (change.operation === 'create' || change.operation === 'delete') {
    const row = (change.operation === 'create' ? change.after : change.before) ?? {};
    changed = Object.keys(row);
    if (change.operation === 'create') after = recorded(row, redact);
    else before = recorded(row, redact);
  } else {
    const old = change.before ?? {};
    const now = change.after ?? {};
    // The version has its own columns, and updatedAt is the change's own time: neither is a change of the row's data.
    changed = entity.fields
      .map((f) => f.name)
      .filter(
        (name) =>
          name !== entity.version && name !== entity.updatedAt && !same(old[name], now[name]),
      );
    if (change.before) before = recorded(old, redact, changed);
    after = recorded(now, redact, changed);
  }
  const subject = context.subject;
  return {
    entity: entity.name,
    rowKey: String(change.key),
    operation: change.operation,
    versionBefore: change.versionBefore ?? null,
    versionAfter: change.versionAfter ?? null,
    changed,
    before,
    after,
    correlationId: context.correlationId ?? null,
    subject: subject === undefined ? null : subject.slice(0, SUBJECT_CAP),
    traceId: context.traceId ?? null,
  };
}

/** How the sinks write the history table on one dialect (the reads go through the history entity's repository). */
interface Writer {
  /** The table, for multi-row inserts (bulk-insert.ts). */
  readonly table: Table;
  /** Each writable field's column and codec: a history row is Kit's own, encoded without the checks a body needs. */
  readonly columns: ReadonlyArray<readonly [name: string, column: string, codec: ColumnCodec]>;
  /** The one-row INSERT, without RETURNING (nothing is read back): compiled once. */
  single: Statement | undefined;
}
const writers = new Map<SqlDialect, Writer>();
const unused = (): never => {
  throw new Error('the history writer runs only on the write transaction');
};

function writerOf(dialect: SqlDialect): Writer {
  let writer = writers.get(dialect);
  if (!writer) {
    const columns = ChangeHistory.writable.map((name) => {
      const field = ChangeHistory.field(name);
      if (!field) throw new Error(`${HISTORY_TABLE} has no field ${name}`);
      return [name, field.column, dialect.codec(field)] as const;
    });
    writer = {
      table: new Table(ChangeHistory, dialect, unused, unused),
      columns,
      single: undefined,
    };
    writers.set(dialect, writer);
  }
  return writer;
}

/** One history row's insert: every writable column (the same shape for every row), then the clock's stamp. */
function prepare(writer: Writer, row: Readonly<Record<string, unknown>>): PreparedInsert {
  const values: Record<string, unknown> = {};
  for (const [name, column, codec] of writer.columns) {
    const value = row[name];
    values[column] = value === null || value === undefined ? null : codec.encode(value);
  }
  return {
    columns: [
      ...writer.columns.map(([, column]) => column),
      ...Object.keys(kitTimestamps(ChangeHistory, writer.table.dialect, 'create')),
    ],
    values,
  };
}

function singleInsert(writer: Writer, db: Db, columns: readonly string[]): Statement {
  writer.single ??= (() => {
    const stamps = kitTimestamps(ChangeHistory, writer.table.dialect, 'create');
    return statement(
      db
        .insertInto(HISTORY_TABLE)
        .values(Object.fromEntries(columns.map((c) => [c, stamps[c] ?? new Slot(c)]))),
    );
  })();
  return writer.single;
}

/**
 * The history sink's SQL form: the row `historyRow` makes, as expressions over the change (see
 * changes.ts `ChangeSql`, cast by the dialect's `changeSql`), so a single write and its history row
 * are one statement where the dialect writes them so.
 */
function historySql(
  entity: Entity,
  redact: ReadonlySet<string>,
  dialect: SqlDialect,
  forms: InlineChangeSql,
): ChangeSinkSql {
  const column = (name: string) => (ChangeHistory.field(name) as { column: string }).column;
  const all = entity.fields.map((f) => f.name);
  const shown = all.filter((name) => !redact.has(name));
  // As historyRow: the version has its own columns, and updatedAt is the change's own time.
  const compared = all.filter((name) => name !== entity.version && name !== entity.updatedAt);
  return {
    table: HISTORY_TABLE,
    columns: (c) => {
      const whole = c.operation === 'create' || c.operation === 'delete';
      const only = whole ? undefined : { names: compared };
      return {
        [column('entity')]: c.text(entity.name),
        [column('rowKey')]: c.keyText,
        [column('operation')]: c.text(c.operation),
        [column('versionBefore')]: c.versionBefore,
        [column('versionAfter')]: c.versionAfter,
        [column('changed')]: forms.jsonArray(c.changed(whole ? all : compared)),
        [column('before')]: forms.json(c.object('before', shown, only)),
        [column('after')]: forms.json(c.object('after', shown, only)),
        [column('correlationId')]: forms.text(c.bind('correlation', (ctx) => ctx.correlationId)),
        [column('subject')]: forms.text(
          c.bind('subject', (ctx) => ctx.subject?.slice(0, SUBJECT_CAP)),
        ),
        [column('traceId')]: forms.text(c.bind('trace', (ctx) => ctx.traceId)),
        ...kitTimestamps(ChangeHistory, dialect, 'create'),
      };
    },
  };
}

/**
 * The sink that records `entity`'s changes: one history row per change, on the write's
 * transaction: one INSERT for a single change, multi-row statements for a batch (bulk-insert.ts).
 * On a dialect that writes a single write's changes inside its statement, its SQL form does so.
 */
export function historySink(entity: Entity, dialect: SqlDialect): ChangeSink {
  const redact: ReadonlySet<string> = new Set(entity.redact);
  const sink = async (
    tx: ChangeTransaction,
    changes: readonly ChangeRecord[],
    context: ChangeContext,
  ): Promise<void> => {
    const writer = writerOf(tx.dialect);
    const prepared = changes.map((change) =>
      prepare(writer, historyRow(entity, redact, change, context)),
    );
    const [first] = prepared;
    if (prepared.length === 1 && first) {
      await tx.execute(singleInsert(writer, tx.db, first.columns).bind(first.values), '');
      return;
    }
    await insertRows(writer.table, tx.db, tx.db, prepared, undefined);
  };
  const forms = dialect.changeSql;
  return forms ? Object.assign(sink, { sql: historySql(entity, redact, dialect, forms) }) : sink;
}

/**
 * The history as a layer on the seam: an entity declaring `history` gets the history's write hook
 * (registered first, so every later hook sees a write the history recorded), and the history
 * table's entity is registered with it.
 *
 * @example
 * ```ts
 * const database = new Database(engine, createTables, log, limits); // attaches historyLayer itself
 * ```
 */
export const historyLayer: SeamLayer = {
  attach({ entity, hooks, dialect, require }) {
    if (!entity.history) return;
    require(ChangeHistory);
    hooks.add({ write: historySink(entity, dialect) });
  },
};
