// JSON text of strings without `JSON.stringify` when nothing needs escaping: the audit line is
// built from a handful of short strings, and a native call per string costs more than checking it.

// A string with none of these is written the same by `JSON.stringify` (between quotes) and by
// `escapeControl` (formats.ts): no quote or backslash, no control character, no surrogate.
// eslint-disable-next-line no-control-regex
const PLAIN = /^[^"\\\u0000-\u001f\u007f-\u009f\u2028\u2029\ud800-\udfff]*$/;

/**
 * Whether `x` needs no escaping, in a JSON string or in a text message.
 *
 * Short strings (methods, most header names and values) are checked by a loop over their
 * characters: a regexp call costs about 450 instructions before it reads a character. Longer ones
 * (paths, user agents, cookies) by the regexp, whose scan costs a fraction of the loop's per
 * character (`npm run bench:instructions`: the loop alone cost 15k instructions on the realistic
 * request).
 */
export function isPlain(x: string): boolean {
  if (x.length > 24) return PLAIN.test(x);
  for (let i = 0; i < x.length; i++) {
    const c = x.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c) return false;
    if (c >= 0x7f && (c <= 0x9f || c === 0x2028 || c === 0x2029 || (c >= 0xd800 && c <= 0xdfff)))
      return false;
  }
  return true;
}

/** `JSON.stringify(x)` for a string, without the call when there is nothing to escape. */
export function quote(x: string): string {
  return isPlain(x) ? `"${x}"` : JSON.stringify(x);
}

/** `x` JSON-escaped, without the quotes: what goes between the quotes of a JSON string. */
export function jsonInner(x: string): string {
  return JSON.stringify(x).slice(1, -1);
}
