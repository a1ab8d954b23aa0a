// OpenTelemetry spans for the statements AutoCrud runs, when the host has registered an SDK (read
// through @kit/core's getKitTracer: no dependency on @opentelemetry/api). One CLIENT span per
// statement, child of whatever span is active (the request's), named and described the way
// OpenTelemetry's database conventions name them: `SELECT products`, with the operation, the
// table and the database system. Never the statement's text or its values: the operation and the
// table are read from Kysely's query tree.
import { getKitTracer, KitSpanKind, type KitSpan, type KitTracer } from '@kit/core/extend';
import type {
  CompiledQuery,
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';

const TRACER = '@kit/autocrud';
const STATUS_ERROR = 2;

const OPERATIONS: Readonly<Record<string, string>> = {
  SelectQueryNode: 'SELECT',
  InsertQueryNode: 'INSERT',
  UpdateQueryNode: 'UPDATE',
  DeleteQueryNode: 'DELETE',
};

interface TableLike {
  kind?: string;
  node?: TableLike;
  table?: { identifier?: { name?: unknown } };
}

function tableName(node: TableLike | undefined): string | undefined {
  const table = node?.kind === 'AliasNode' ? node.node : node;
  const name = table?.kind === 'TableNode' ? table.table?.identifier?.name : undefined;
  return typeof name === 'string' ? name : undefined;
}

/** The operation and table of a query tree (`undefined` for raw SQL such as the health check's `select 1`). */
function describeStatement(
  node: RootOperationNode,
): { operation: string; table: string | undefined } | undefined {
  const operation = OPERATIONS[node.kind];
  if (operation === undefined) return undefined;
  const n = node as unknown as {
    from?: { froms?: TableLike[] };
    into?: TableLike;
    table?: TableLike;
  };
  const table = tableName(n.from?.froms?.[0] ?? n.into ?? n.table);
  return { operation, table };
}

function startStatementSpan(
  tracer: KitTracer,
  system: string,
  node: RootOperationNode,
): KitSpan | undefined {
  const statement = describeStatement(node);
  if (statement === undefined) return undefined;
  const attributes: Record<string, string> = {
    'db.system.name': system,
    'db.operation.name': statement.operation,
  };
  if (statement.table !== undefined) attributes['db.collection.name'] = statement.table;
  const name =
    statement.table === undefined
      ? statement.operation
      : `${statement.operation} ${statement.table}`;
  return tracer.startSpan(name, KitSpanKind.CLIENT, attributes);
}

/** Marks a span failed with the driver's error class and SQLSTATE code, never its message (it can quote values). */
function fail(span: KitSpan, err: unknown): void {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code))
    span.setAttribute('db.response.status_code', code);
  span.setAttribute(
    'error.type',
    typeof code === 'string' && code !== ''
      ? code
      : err instanceof Error
        ? err.constructor.name
        : 'error',
  );
  span.setStatus({ code: STATUS_ERROR });
}

/** The tracer to use now, or `undefined` when no SDK is registered (the common, free case). */
export function statementTracer(): KitTracer | undefined {
  return getKitTracer(TRACER);
}

// Errors already recorded on a statement's span: the builder's spans leave them alone.
const recorded = new WeakSet<object>();

/** Runs one compiled statement under its span. */
export async function traceStatement<T>(
  tracer: KitTracer,
  system: string,
  query: CompiledQuery,
  run: () => Promise<T>,
): Promise<T> {
  const span = startStatementSpan(tracer, system, query.query);
  if (span === undefined) return run();
  try {
    return await tracer.withSpan(span, run);
  } catch (err) {
    fail(span, err);
    if (typeof err === 'object' && err !== null) recorded.add(err);
    throw err;
  } finally {
    span.end();
  }
}

/**
 * Spans for the statements Kysely's builder runs during one database call: started when the query
 * is compiled (in the caller's context, so the request's span is the parent), ended with its
 * result. Kysely compiles through the same hook when a statement is only built to be kept (the
 * repository's prepared statements, which run through `traceStatement`): such a span never gets a
 * result and is dropped unended, so it is never exported. A builder statement that fails has no
 * result either: it is the last one started, and `finish(err)` ends it as failed.
 */
export class StatementSpans implements KyselyPlugin {
  readonly #pending = new Map<unknown, KitSpan>();

  constructor(
    private readonly tracer: KitTracer,
    private readonly system: string,
  ) {}

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const span = startStatementSpan(this.tracer, this.system, args.node);
    if (span !== undefined) this.#pending.set(args.queryId, span);
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    const span = this.#pending.get(args.queryId);
    if (span !== undefined) {
      this.#pending.delete(args.queryId);
      span.end();
    }
    return args.result;
  }

  /** At the end of the call: `err` is why it failed, if it did. */
  finish(err?: unknown): void {
    const failed =
      err !== undefined && !(typeof err === 'object' && err !== null && recorded.has(err))
        ? [...this.#pending.values()].at(-1)
        : undefined;
    if (failed !== undefined) {
      fail(failed, err);
      failed.end();
    }
    this.#pending.clear();
  }
}
