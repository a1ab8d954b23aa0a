// A create or replace body as the repository takes it: every field in Kit's form (a timestamp in
// UTC, a UUID in lower case), an explicit null kept (it is NULL, not the default), and anything
// the JSON Schema let through that no engine stores exactly refused with a 400 naming the field:
// an integer beyond 2^53 - 1 (JSON.parse has already rounded it), NUL or a lone surrogate in text.
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from 'fastify';
import { errorCodes } from 'fastify';
import type { Entity } from '../entity.js';
import { ValueFault } from '../values/kinds.js';
import { fieldValue } from '../values/fields.js';
import { answer, BodyKeyError, type InvalidParameter } from './problems.js';
import { NotJsonError } from './route-errors.js';
import { parameterText } from '../answers.js';

/** The body in Kit's form, or the field at fault. */
export function readBody(
  entity: Entity,
  body: Readonly<Record<string, unknown>>,
): { values: Record<string, unknown> } | { fault: InvalidParameter } {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(body)) {
    const value = body[name];
    const field = entity.field(name);
    // The body schema refuses unknown and read-only fields; this is what it let through.
    if (!field || value === undefined) continue;
    if (value === null) {
      if (!field.nullable)
        return { fault: { in: 'body', name, detail: parameterText('notNullable') } };
      out[name] = null;
      continue;
    }
    const found = fieldValue(field, value);
    if (found instanceof ValueFault) return { fault: { in: 'body', name, detail: found.detail } };
    out[name] = found;
  }
  return { values: out };
}

/** `application/json` or a `+json` type, with any parameters. */
const JSON_MEDIA = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/**
 * A route-level `preValidation` hook: a body that is not JSON is a 415 (Fastify parses
 * `text/plain` by itself, and the body schema would only call it "not an object").
 */
export function requireJson(
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
): void {
  const type = request.headers['content-type'];
  // Answered: Fastify goes no further (and the hook must not call done).
  if (type !== undefined && !JSON_MEDIA.test(type)) answer(reply, new NotJsonError());
  else done();
}

/** The media type of a JSON Merge Patch (RFC 7396). */
export const MERGE_PATCH = 'application/merge-patch+json';

// `__proto__` however a JSON string spells it (`\u005f`...), as secure-json-parse looks for it.
const PROTO_TEXT =
  /(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])/;

/** True when `value` holds an own `__proto__` key at any depth (JSON.parse makes it an own property). */
function holdsProto(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (Object.prototype.hasOwnProperty.call(value, '__proto__')) return true;
  return Object.values(value).some(holdsProto);
}

function parseMergePatch(
  _request: FastifyRequest,
  body: string | Buffer,
  done: (err: Error | null, value?: unknown) => void,
): void {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // Fastify's own error for a JSON body that does not parse: answered as its parser's is.
    done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY());
    return;
  }
  // Refused, never stripped: a patch names fields, and no field is called that.
  if (PROTO_TEXT.test(text) && holdsProto(value)) done(new BodyKeyError('__proto__'));
  else done(null, value);
}

/**
 * Makes the group parse `application/merge-patch+json` bodies as JSON (Fastify parses only
 * `application/json` by itself), unless the host registered a parser for it already. A
 * `__proto__` key, at any depth, is a 400 naming it.
 */
export function acceptMergePatch(group: FastifyInstance): void {
  if (group.hasContentTypeParser(MERGE_PATCH)) return;
  group.addContentTypeParser(MERGE_PATCH, { parseAs: 'string' }, parseMergePatch);
}
