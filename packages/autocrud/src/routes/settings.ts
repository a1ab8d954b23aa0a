// What the generated routes of one entity are made from: the repository's operations they call
// (nothing of SQL) and the settings of the @AutoCrud class. Shared by routes.ts and create/route.ts.
import type { onRequestHookHandler } from 'fastify';
import type { ResolvedAuthorization } from '../authorization.js';
import type { Entity } from '../entity.js';
import type { Scope } from '../mapper/sql/query.js';
import type {
  CallOptions,
  EntityRepository,
  ReadOptions,
  Row,
  UpsertedRow,
  UpsertResolution,
  WriteOptions,
} from '../mapper/repository.js';
import type { RowChange } from './batch.js';
import type { CursorCodec } from './cursor.js';
import type { IdempotencySettings } from './create/idempotent.js';
import type { RelationsOf } from './includes.js';
import type { ListRepository } from './list.js';
import type { NestedRelations } from './nested-create.js';
import type { PageLimits } from './schemas.js';
import type { CrudValidation } from './validation.js';

/** What the routes need of the mapper: the repository's operations, nothing of SQL. */
export interface CrudRepository extends ListRepository {
  all(options?: CallOptions): Promise<Row[]>;
  get(key: unknown, options?: ReadOptions): Promise<Row | undefined>;
  create(input: Readonly<Record<string, unknown>>, options?: CallOptions): Promise<Row>;
  update(
    key: unknown,
    input: Readonly<Record<string, unknown>>,
    options?: WriteOptions,
  ): Promise<Row | undefined>;
  patch(
    key: unknown,
    patch: Readonly<Record<string, unknown>>,
    options?: WriteOptions,
  ): Promise<Row | undefined>;
  createMany(
    inputs: readonly Readonly<Record<string, unknown>>[],
    options?: CallOptions,
  ): Promise<Row[]>;
  createTree(
    input: Readonly<Record<string, unknown>>,
    children: Readonly<
      Record<
        string,
        {
          readonly repository: EntityRepository<Row, Readonly<Record<string, unknown>>>;
          readonly field: string;
          readonly rows: readonly Readonly<Record<string, unknown>>[];
          readonly scope?: Scope;
        }
      >
    >,
    options?: CallOptions,
  ): Promise<Row>;
  upsertMany(
    inputs: readonly Readonly<Record<string, unknown>>[],
    options?: CallOptions & {
      readonly resolution?: UpsertResolution;
      readonly key?: readonly string[];
    },
  ): Promise<UpsertedRow[]>;
  patchMany(changes: readonly RowChange[], options?: CallOptions): Promise<Row[]>;
  delete(key: unknown, options?: WriteOptions): Promise<boolean>;
  /** True when the entity's writes are recorded (a change sink: the history, the outbox): they then carry the request's ChangeContext. */
  readonly recordsChanges?: boolean;
}

/** Everything the routes of one `@AutoCrud` class are made from. */
export interface CrudRouteSettings {
  readonly entity: Entity;
  readonly operations: number;
  readonly limits: PageLimits;
  readonly repository: CrudRepository;
  readonly validation: CrudValidation;
  /** The group's URL prefix, for `Location` (`/api/product`). */
  readonly prefix: string;
  /** `app.kitAuthenticate` when every route requires a bearer token. */
  readonly authenticate?: onRequestHookHandler;
  /** Signs and checks the list's cursors. */
  readonly cursors: CursorCodec;
  /** Exactly-once creates with `Idempotency-Key`; absent: off. */
  readonly idempotency?: IdempotencySettings;
  /** `PUT`, `PATCH` and `DELETE` without `If-Match` are 428. */
  readonly requireIfMatch: boolean;
  /** The one-to-many relations a create may carry (linked once every class is known). */
  readonly nested: NestedRelations;
  /** The relations of each served entity, for `include` and the nested list routes. */
  readonly relations: RelationsOf;
  /** The app's token check, read only when a related entity's rules need it on a class without `authenticate` (it fails start-up without configureJwt). */
  readonly tokenCheck?: () => onRequestHookHandler;
  /** Who may do what to which rows (with `authenticate`, which it needs); absent: every caller the token check admits may do everything. */
  readonly authorization?: ResolvedAuthorization;
  /** The repository of a related entity, for the nested list routes. */
  readonly repositoryOf: (entity: Entity) => ListRepository;
}
