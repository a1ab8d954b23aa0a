// Exactly-once creates: a POST carrying `Idempotency-Key` runs through Kit's idempotency store.
// The first request with a key reserves it, inserts, and stores its answer; a retry with the same
// key and body gets that answer again (`Idempotent-Replayed: true`) and inserts nothing; the same
// key with another body is 422; a retry while the first still runs is 409 with Retry-After.
// Shared stores (Redis) make this hold across every instance of the service.
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IIdempotencyStore, JsonValue } from '@kit/core';
import type { Entity } from '../../entity.js';
import { badRequest, sendShape } from '../problems.js';
import { IdempotencyError } from '../route-errors.js';
import { parameterText } from '../../answers.js';

/** How idempotent creates behave (resolved from the options). */
export interface IdempotencySettings {
  readonly store: IIdempotencyStore;
  /** How long a completed create is replayed. */
  readonly ttlMs: number;
  /** How long a key stays reserved while its create runs (a holder that died frees it after this). */
  readonly reservationTtlMs: number;
}

/** The header, as Fastify's lower-cased request headers carry it. */
export const IDEMPOTENCY_HEADER = 'idempotency-key';

/** What a create answered, as stored for replays. */
export interface CreatedAnswer {
  /** 201 unless said (an upsert that created nothing answers 200). */
  readonly status?: number;
  /** The created row's URL; none for a bulk create (many rows). */
  readonly location: string | undefined;
  readonly etag: string | undefined;
  /** The created row, or the created rows of a bulk create. */
  readonly row: Record<string, unknown> | readonly Record<string, unknown>[];
  /** Other headers of the answer (an upsert's `Preference-Applied` and `Kit-Row-Outcomes`). */
  readonly headers?: Readonly<Record<string, string>>;
}

type StoredAnswer = {
  status: number;
  location: string | null;
  etag: string | null;
  body: JsonValue;
  headers?: Record<string, string>;
};

type Claims = { iss?: unknown; sub?: unknown; azp?: unknown; client_id?: unknown };

const named = (value: unknown): value is string => typeof value === 'string' && value !== '';

/**
 * Who the caller of an authenticated request is, for scoping keys: the token's issuer and its
 * subject (`sub`), or, for a token with none (an OAuth client-credentials token), the client it
 * was issued to (`azp`, else `client_id`). `undefined` for a token that names neither; `'-'` for a
 * request without a token (every anonymous caller shares one scope).
 */
function callerOf(request: FastifyRequest): string | undefined {
  const user = (request as { user?: unknown }).user;
  if (typeof user !== 'object' || user === null) return '-';
  const { iss, sub, azp, client_id: clientId } = user as Claims;
  // A subject hashes as it always has (keys stored before keep matching across an upgrade); a
  // client is tagged, so that a user `x` and a client `x` are different callers.
  const client = named(azp) ? azp : named(clientId) ? clientId : undefined;
  const who = named(sub)
    ? `${String(iss)}\0${sub}`
    : client !== undefined
      ? `client\0${String(iss)}\0${client}`
      : undefined;
  return who === undefined
    ? undefined
    : createHash('sha256').update(who).digest('base64url').slice(0, 22);
}

/**
 * The store key: the group's prefix, the caller (so that one client's key never replays another's
 * answer; see {@link callerOf}), and the client's key. `undefined` when the caller has no identity.
 */
function storeKey(request: FastifyRequest, prefix: string, key: string): string | undefined {
  const caller = callerOf(request);
  return caller === undefined ? undefined : `autocrud:${prefix}:${caller}:${key}`;
}

/** The body's writable fields in the entity's order, so that key order does not matter. */
function fieldsOf(entity: Entity, body: Readonly<Record<string, unknown>>): unknown[] {
  return entity.writable
    .filter((name) => Object.prototype.hasOwnProperty.call(body, name))
    .map((name) => [name, body[name]]);
}

/**
 * A digest of the body (one row, or every row of a bulk create in order) and of what else makes
 * the request (`extra`: a nested create's children, an upsert's resolution).
 */
function fingerprint(
  entity: Entity,
  body: Readonly<Record<string, unknown>> | readonly Readonly<Record<string, unknown>>[],
  extra: unknown,
): string {
  const fields = Array.isArray(body)
    ? ['rows', ...body.map((row: Readonly<Record<string, unknown>>) => fieldsOf(entity, row))]
    : fieldsOf(entity, body as Readonly<Record<string, unknown>>);
  return createHash('sha256')
    .update(JSON.stringify(extra === undefined ? fields : [fields, extra]))
    .digest('base64url');
}

function send(
  reply: FastifyReply,
  answer: CreatedAnswer | StoredAnswer,
  replayed: boolean,
): FastifyReply {
  const etag = 'row' in answer ? answer.etag : (answer.etag ?? undefined);
  const location = 'row' in answer ? answer.location : (answer.location ?? undefined);
  reply.code(answer.status ?? 201).header('idempotent-replayed', String(replayed));
  if (answer.headers) reply.headers(answer.headers);
  if (location !== undefined) reply.header('location', location);
  if (etag !== undefined) reply.header('etag', etag);
  return reply.send('row' in answer ? answer.row : answer.body);
}

/** Answers a plain create (no key): 201 (or the answer's status), Location (one row), ETag when versioned (one row). */
export function sendCreated(reply: FastifyReply, answer: CreatedAnswer): FastifyReply {
  reply.code(answer.status ?? 201);
  if (answer.headers) reply.headers(answer.headers);
  if (answer.location !== undefined) reply.header('location', answer.location);
  if (answer.etag !== undefined) reply.header('etag', answer.etag);
  return reply.send(answer.row);
}

/** Runs `create` at most once per key (see the top of this file) and answers the request. */
export async function idempotentCreate(
  request: FastifyRequest,
  reply: FastifyReply,
  settings: IdempotencySettings,
  scope: {
    entity: Entity;
    prefix: string;
    key: string;
    body: Readonly<Record<string, unknown>> | readonly Readonly<Record<string, unknown>>[];
    extra?: unknown;
  },
  create: () => Promise<CreatedAnswer>,
): Promise<FastifyReply> {
  const key = storeKey(request, scope.prefix, scope.key);
  if (key === undefined)
    return badRequest(reply, {
      in: 'headers',
      name: 'Idempotency-Key',
      detail: parameterText('noCaller'),
    });
  let reservation;
  try {
    reservation = await settings.store.reserve(key, {
      ttlMs: settings.reservationTtlMs,
      fingerprint: fingerprint(scope.entity, scope.body, scope.extra),
    });
  } catch (err) {
    request.log.warn({ err }, 'AutoCrud: the idempotency store failed; the create was not run');
    return sendShape(reply, new IdempotencyError('unavailable', scope.entity.name).problem());
  }
  switch (reservation.outcome) {
    case 'completed':
      return send(reply, reservation.response as StoredAnswer, true);
    case 'pending':
      return sendShape(
        reply,
        new IdempotencyError('pending', scope.entity.name, {
          retryAfterMs: reservation.retryAfterMs,
        }).problem(),
      );
    case 'mismatch':
      return sendShape(reply, new IdempotencyError('mismatch', scope.entity.name).problem());
  }
  request.log.debug(
    { idempotencyKey: scope.key, prefix: scope.prefix },
    'AutoCrud: Idempotency-Key reserved; creating',
  );
  let answer: CreatedAnswer;
  try {
    answer = await create();
  } catch (err) {
    // Nothing was inserted: free the key so that the client's retry runs again.
    await settings.store
      .release(key, reservation.token)
      .catch((releaseError: unknown) =>
        request.log.warn(
          { err: releaseError },
          'AutoCrud: an idempotency key could not be released',
        ),
      );
    throw err;
  }
  const stored: StoredAnswer = {
    status: answer.status ?? 201,
    location: answer.location ?? null,
    etag: answer.etag ?? null,
    body: answer.row as JsonValue,
    ...(answer.headers ? { headers: { ...answer.headers } } : {}),
  };
  const kept = await settings.store
    .complete(key, reservation.token, stored, { ttlMs: settings.ttlMs })
    .catch((err: unknown) => {
      request.log.warn({ err }, 'AutoCrud: the answer of an idempotent create could not be stored');
      return false;
    });
  if (!kept) {
    // The row exists; a retry is refused (409) until the reservation lapses, then runs again.
    request.log.warn(
      { key: scope.key, prefix: scope.prefix },
      'AutoCrud: the answer of an idempotent create was not kept (its reservation lapsed, or the store evicted or refused it); a retry with its key would create again',
    );
  }
  return send(reply, answer, false);
}
