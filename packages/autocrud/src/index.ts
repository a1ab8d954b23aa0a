// The public surface of @kit/autocrud, and nothing else.
export { addKitAutoCrud, KIT_AUTOCRUD, type KitAutoCrud, type PGliteInstance } from './plugin.js';
export { AutoCrud, type AutoCrudOptions } from './decorator.js';
export { CrudOperations } from './operations.js';
export type {
  AutoCrudAuthorization,
  AuthorizationRule,
  AuthorizationHook,
  AutoCrudOperation,
  ClaimPath,
} from './authorization.js';
export { autoCrudAccess } from './routes/authorize.js';
export {
  defineEntity,
  type Entity,
  type EntityDefinition,
  type EntityField,
  type EntityFieldName,
  type EntityInput,
  type EntityRow,
  type EntitySchema,
  type EntityReference,
  type FieldType,
  type ReferenceOptions,
  type ReferenceRule,
  type ReferenceTarget,
  type RowOf,
} from './entity.js';
export type { KitAutoCrudOptions, IdempotencyOptions } from './options.js';
export type { OutboxOptions } from './outbox/options.js';
export type { ChangeMessage, ChangeHandler, OutboxStats, OutboxTarget } from './outbox/types.js';
export {
  writeMigration,
  type WriteMigrationOptions,
  type WrittenMigration,
} from './migration-writer.js';
export { DatabaseHealthCheck } from './health.js';
// The change history's table, an entity like any other: `crud.repository(ChangeHistory)` reads it.
export { ChangeHistory } from './mapper/history/history.js';
// A repository comes from the runtime (`crud.repository(Entity)`), never from `new`: the type only.
export type { EntityRepository } from './repository.js';
export type {
  Row,
  CallOptions,
  ReadOptions,
  WriteOptions,
  UpsertedRow,
  UpsertOutcome,
  UpsertResolution,
} from './mapper/repository.js';
export type { IncludePlan } from './mapper/reads/includes.js';
// What a write's caller and an outbox subscriber see of a change; the sink types (Kysely-bound) are
// in `@kit/autocrud/extend` (extend.ts).
export type { ChangeContext, ChangeOperation } from './mapper/seam/changes.js';
export type { ListOptions, Filter, FilterOperator, SortKey, Scope } from './mapper/sql/query.js';
export {
  DatabaseUnavailableError,
  ConnectionLostError,
  DatabaseBusyError,
  StatementTimeoutError,
  ConstraintViolationError,
  InvalidValueError,
  MissingReferenceError,
  StillReferencedError,
  SchemaMismatchError,
  UnrepresentableValueError,
  VersionConflictError,
  BatchRowError,
} from './mapper/errors.js';
export type { ValueKind } from './values/kinds.js';
export { redactConnectionString } from './mapper/engines/shared/connection-string.js';
export type { EngineKind } from './mapper/sql/engine.js';
export { autoCrudErrors } from './errors.js';
