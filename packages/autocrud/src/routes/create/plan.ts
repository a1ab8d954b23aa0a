// What every kind of create (single, bulk, nested, upsert) is planned from, and what a plan is: the
// body in Kit's form, what else an Idempotency-Key covers, and the create to run. The route
// (route.ts) picks the kind from the body and the Prefer header and runs the plan, once or through
// the idempotency store (idempotent.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Entity } from '../../entity.js';
import type { CallOptions, Row, UpsertedRow, UpsertResolution } from '../../mapper/repository.js';
import type { RouteAuthorization } from '../authorize.js';
import type { RelationsOf } from '../includes.js';
import type { NestedRelations } from '../nested-create.js';
import type { CrudRepository } from '../settings.js';
import type { CreatedAnswer } from './idempotent.js';

/** What the create route of one entity plans from, made once at start-up. */
export interface CreateContext {
  readonly entity: Entity;
  readonly repository: CrudRepository;
  readonly authz: RouteAuthorization;
  /** The one-to-many relations a create may carry (linked once every class is known). */
  readonly nested: NestedRelations;
  /** The relations of each served entity: the rows a nested create's children may reference. */
  readonly relationsOf: RelationsOf;
  /** The answer of a create of one row: Location, ETag, the row as the caller may see it. */
  readonly created: (row: Row, shown?: Row) => CreatedAnswer;
  /** The answer of an upsert: 201 when every row was created, else 200, and each row's outcome. */
  readonly outcomes: (
    rows: readonly UpsertedRow[],
    token: string,
    single: boolean,
  ) => CreatedAnswer;
}

/** One create request as its plan sees it. */
export interface CreateCall {
  readonly context: CreateContext;
  readonly request: FastifyRequest;
  readonly reply: FastifyReply;
  /** The caller's scope (and signal) for every repository call. */
  readonly call: CallOptions;
  /** `call`, with the request's ChangeContext when the entity records its changes. */
  readonly options: CallOptions;
  /** A row as the caller may see it (the fields its rule hides left out). */
  readonly shown: (row: Row) => Row;
}

/** An upsert's `Prefer: resolution=...` and the unique key its rows are matched on. */
export interface UpsertPreference {
  /** As `Preference-Applied` repeats it (`resolution=merge-duplicates`). */
  readonly token: string;
  readonly resolution: UpsertResolution;
  readonly key: readonly string[];
}

/** What a create request asks for, read and admitted: the create is still to run. */
export interface CreatePlan {
  readonly body: Record<string, unknown> | Record<string, unknown>[];
  /** What else the idempotency fingerprint covers. */
  readonly extra: unknown;
  /** One row: the route's compiled serializer (its 201 is the row's schema); else the mapper's JSON values as they are. */
  readonly serializeAsJson: boolean;
  readonly create: () => Promise<CreatedAnswer>;
}
