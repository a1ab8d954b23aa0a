// The request's headers as the Default line writes them, twice: as a JSON object (the `Headers`
// field) and as that JSON inside the JSON string of the message (`Headers={\"host\":...}`).
import { isPlain } from './json-text.js';
import { AUDIT_HEADER_VALUE_CAP, REDACTED, type Redactor } from './redaction.js';

/**
 * What the two texts write around one header's value. Each piece closes the value before it
 * (`","name":"`), so a header costs two concatenations per text, whatever its name.
 */
interface NamePieces {
  /** `"name":"` for the first header, `","name":"` for the others. */
  readonly first: string;
  readonly next: string;
  /** The same inside the message's JSON string: `\"name\":\"` and `\",\"name\":\"`. */
  readonly firstQuoted: string;
  readonly nextQuoted: string;
  /** Whether the value is logged as `***`. */
  readonly redacted: boolean;
}

/** Names kept; a client that sends a new name with every request fills it and is then served uncached. */
const CACHED_NAMES = 256;
/** Longer names are not kept, so the cache stays small whatever clients send. */
const CACHED_NAME_LENGTH = 64;

/**
 * A header name's pieces, computed once per name and kept: a request's headers are mostly the
 * same few names. Replaces, per header, the redaction lookup (a lower-casing scan and a set
 * lookup), the scan of the name for characters to escape and four concatenations in each text.
 * One per audit trail (its redaction rules), built at start-up.
 */
export class HeaderNames {
  readonly #redactor: Redactor | undefined;
  /** `null`: a name that needs escaping, so the general path writes the headers. */
  readonly #names = new Map<string, NamePieces | null>();

  /** `redactor` decides which values are logged as `***`; without one, none is. */
  constructor(redactor?: Redactor) {
    this.#redactor = redactor;
  }

  /** The pieces of `name`, or `undefined` when it needs escaping. */
  pieces(name: string): NamePieces | undefined {
    let pieces = this.#names.get(name);
    if (pieces === undefined) {
      // Joined rather than concatenated: a flat string is one piece in every line that uses it.
      pieces = isPlain(name)
        ? {
            first: ['"', name, '":"'].join(''),
            next: ['","', name, '":"'].join(''),
            firstQuoted: ['\\"', name, '\\":\\"'].join(''),
            nextQuoted: ['\\",\\"', name, '\\":\\"'].join(''),
            redacted: this.#redactor?.redactsHeader(name) === true,
          }
        : null;
      if (this.#names.size < CACHED_NAMES && name.length <= CACHED_NAME_LENGTH)
        this.#names.set(name, pieces);
    }
    return pieces ?? undefined;
  }
}

/** The names of headers that are already redacted (plain entries): nothing more is redacted. */
const AS_LOGGED = new HeaderNames();

/**
 * The headers as JSON (exactly `JSON.stringify` of them as logged) and as they appear inside the
 * JSON string of the Default message, built in one pass. With the names of an audit trail, `raw`
 * are the request's own headers and redacted names get `***` on the way, which spares building
 * the redacted object (on the realistic bench request that copy, eleven megamorphic stores and
 * loads, cost about 5k instructions). `undefined` when a value needs more than that: a repeated
 * header (an array), a value over the cap, a character to escape.
 *
 * @example
 * ```ts
 * plainHeadersJsonPair({ host: 'h', authorization: 'x' }, new HeaderNames(redactor));
 * // ['{"host":"h","authorization":"***"}', '{\\"host\\":\\"h\\",\\"authorization\\":\\"***\\"}']
 * ```
 */
export function plainHeadersJsonPair(
  raw: Readonly<Record<string, string | string[] | undefined>>,
  names: HeaderNames = AS_LOGGED,
): [json: string, inMessage: string] | undefined {
  let json = '{';
  let quoted = '{';
  let first = true;
  for (const name of Object.keys(raw)) {
    const value = raw[name];
    if (value === undefined) continue;
    const pieces = names.pieces(name);
    if (pieces === undefined) return undefined;
    let logged: string;
    if (pieces.redacted) logged = REDACTED;
    else if (typeof value !== 'string' || value.length > AUDIT_HEADER_VALUE_CAP || !isPlain(value))
      return undefined;
    else logged = value;
    if (first) {
      first = false;
      json += pieces.first + logged;
      quoted += pieces.firstQuoted + logged;
    } else {
      json += pieces.next + logged;
      quoted += pieces.nextQuoted + logged;
    }
  }
  return first ? ['{}', '{}'] : [json + '"}', quoted + '\\"}'];
}
