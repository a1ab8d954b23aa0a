// The list's `after` cursor: an opaque token for a keyset position. Its format (see
// docs/autocrud.md, "Cursor format"): base64url(JSON array of the position's values) "." base64url
// of the first 16 bytes of HMAC-SHA256 over the format version, the query it belongs to (entity,
// order, filters) and the payload. A token that was altered, made up, or issued for another query
// fails the check and is a 400; only then are its values read, and each is checked against its
// field's type before it reaches the mapper as a bound parameter.
import { createHmac, createSecretKey, randomBytes, timingSafeEqual } from 'node:crypto';

const FORMAT = 'kit-autocrud-cursor-v1';
const TAG_BYTES = 16;
/** The longest token accepted (the query-string schema refuses longer ones): string sort keys of a few KB still fit, and Node's 16 KB request-header limit is not reached. */
export const MAX_CURSOR_LENGTH = 8192;

/** Signs and checks cursors with one key. */
export interface CursorCodec {
  /** The token for a position in the query `scope`. */
  encode(scope: string, values: readonly unknown[]): string;
  /** The position's values, or `undefined` when the token is not one this codec issued for `scope`. */
  decode(scope: string, token: string): unknown[] | undefined;
}

/** A codec keyed by `secret`, or by 32 random bytes of this process when there is none. */
export function cursorCodec(secret: string | undefined): CursorCodec {
  // A KeyObject made once: given raw bytes, createHmac makes one at every call, a cost paid by
  // every list answer.
  const key = createSecretKey(secret === undefined ? randomBytes(32) : Buffer.from(secret, 'utf8'));
  const tag = (scope: string, payload: string) =>
    createHmac('sha256', key)
      .update(`${FORMAT}\0${scope}\0${payload}`)
      .digest()
      .subarray(0, TAG_BYTES);
  return {
    encode(scope, values) {
      const payload = Buffer.from(JSON.stringify(values), 'utf8').toString('base64url');
      return `${payload}.${tag(scope, payload).toString('base64url')}`;
    },
    decode(scope, token) {
      const dot = token.indexOf('.');
      if (dot < 1 || token.length > MAX_CURSOR_LENGTH) return undefined;
      const payload = token.slice(0, dot);
      const given = Buffer.from(token.slice(dot + 1), 'base64url');
      if (given.length !== TAG_BYTES || !timingSafeEqual(given, tag(scope, payload)))
        return undefined;
      try {
        const values: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
        return Array.isArray(values) ? values : undefined;
      } catch {
        return undefined;
      }
    },
  };
}
