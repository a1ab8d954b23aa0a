// Audit lines written straight to a pino logger's destination, byte for byte what pino would write.
//
// pino serialises a log call generically: every key of the merging object goes through a
// serializer lookup, a stringifier lookup and a type switch, and the message is escaped again. An
// audit line has a fixed shape, so Kit builds its JSON with a few `JSON.stringify` calls (a whole
// Default entry in 1.3 µs of CPU instead of 3.3 µs through `logger.info`, Node 20, no-op
// destination, `npm run bench:lines`) and borrows from the logger only what makes a line that logger's: the
// level prefix, the timestamp, the bindings, the message key and prefix, the line end and the
// destination. Those live under pino's own symbols, found by description.
//
// Kit takes this path only when the result is the line pino itself would write. Anything that
// makes a line depend on more than that (a mixin, `formatters.log`, redaction, a serializer or a
// stringifier for one of the audit keys, `nestedKey`, a `logMethod` hook, a destination that reads
// per-line metadata such as `pino.multistream`, a subscriber to pino's `pino_asJson` tracing
// channel), or a pino whose internals are not the expected ones, keeps the ordinary
// `logger[level](fields, message)` call. `audit-pino-lines.test.ts` compares both paths for each case.
import { tracingChannel } from 'node:diagnostics_channel';
import type { FastifyBaseLogger } from 'fastify';

interface Destination {
  write(chunk: string): unknown;
}

type Hooks = { logMethod?: unknown; streamWrite?: (line: string) => string };
type Formatters = { log?: unknown };

// pino's private symbols (`Symbol('pino.…')`, one set per copy of pino) that Kit reads, found by
// their description; serializers, formatters and hooks sit under public `Symbol.for()` keys.
const PRIVATE = ['pino.lsCache', 'pino.time', 'pino.chindings', 'pino.end', 'pino.stream', 'pino.messageKey', 'pino.msgPrefix', 'pino.mixin', 'pino.stringifiers', 'pino.nestedKey'] as const;
type PrivateName = (typeof PRIVATE)[number];

const asJsonTracing = tracingChannel('pino_asJson');

function pinoSymbols(logger: object): Map<string, symbol> {
  const found = new Map<string, symbol>();
  for (let o: object | null = logger; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    for (const s of Object.getOwnPropertySymbols(o)) {
      if (s.description !== undefined && !found.has(s.description)) found.set(s.description, s);
    }
  }
  return found;
}

/** The destination a pino logger writes to (pino's `stream` symbol), or `undefined` for another logger. */
export function pinoDestinationOf(logger: object): unknown {
  const symbol = pinoSymbols(logger).get('pino.stream');
  return symbol === undefined ? undefined : (logger as Record<symbol, unknown>)[symbol];
}

/**
 * Writes complete audit lines for one pino logger. `create` returns `undefined` when the logger's
 * configuration needs pino's generic path.
 */
export class PinoLines {
  readonly #logger: Record<symbol, unknown> & FastifyBaseLogger;
  // pino's symbols, resolved once: a line reads the logger's current state under them.
  readonly #lsCache: symbol;
  readonly #time: symbol;
  readonly #chindings: symbol;
  readonly #end: symbol;
  readonly #stream: symbol;
  readonly #msgPrefix: symbol;
  readonly #levels: Readonly<Record<string, number>>;
  /** `,"msg":` for pino's default message key. */
  readonly #messageKey: string;
  readonly #streamWrite: ((line: string) => string) | undefined;

  private constructor(logger: Record<symbol, unknown> & FastifyBaseLogger, sym: Record<PrivateName, symbol>, levels: Record<string, number>) {
    this.#logger = logger;
    this.#lsCache = sym['pino.lsCache'];
    this.#time = sym['pino.time'];
    this.#chindings = sym['pino.chindings'];
    this.#end = sym['pino.end'];
    this.#stream = sym['pino.stream'];
    this.#msgPrefix = sym['pino.msgPrefix'];
    this.#levels = levels;
    this.#messageKey = `,${JSON.stringify(logger[sym['pino.messageKey']])}:`;
    this.#streamWrite = (logger[Symbol.for('pino.hooks')] as Hooks | undefined)?.streamWrite;
  }

  /**
   * A line writer for `logger`, or `undefined` when `fieldKeys` (the keys of the structured
   * fields) or the logger's configuration could make pino's line differ from Kit's.
   */
  static create(logger: FastifyBaseLogger, fieldKeys: readonly string[]): PinoLines | undefined {
    const l = logger as unknown as Record<symbol, unknown> & FastifyBaseLogger;
    const found = pinoSymbols(l);
    const sym = {} as Record<PrivateName, symbol>;
    for (const name of PRIVATE) {
      const s = found.get(name);
      if (s === undefined) return undefined;
      sym[name] = s;
    }
    const levels = (l as unknown as { levels?: { values?: Record<string, number> } }).levels?.values;
    const lsCache = l[sym['pino.lsCache']] as Record<number, unknown> | undefined;
    if (levels === undefined || typeof lsCache !== 'object' || lsCache === null) return undefined;
    if (typeof l[sym['pino.time']] !== 'function' || typeof l[sym['pino.chindings']] !== 'string' || typeof l[sym['pino.end']] !== 'string') return undefined;
    if (typeof l[sym['pino.messageKey']] !== 'string' || l[sym['pino.mixin']] || l[sym['pino.nestedKey']]) return undefined;
    const hooks = l[Symbol.for('pino.hooks')] as Hooks | undefined;
    if (hooks?.logMethod) return undefined;
    if (hooks?.streamWrite !== undefined && typeof hooks.streamWrite !== 'function') return undefined;
    if ((l[Symbol.for('pino.formatters')] as Formatters | undefined)?.log) return undefined;
    const serializers = l[Symbol.for('pino.serializers')] as Record<string, unknown> | undefined;
    const stringifiers = l[sym['pino.stringifiers']] as Record<string | symbol, unknown> | undefined;
    if (serializers === undefined || stringifiers === undefined) return undefined;
    // Redaction installs stringifiers (a wildcard one for `*` paths); the message key counts too.
    if (Object.getOwnPropertySymbols(stringifiers).length > 0) return undefined;
    for (const key of [...fieldKeys, l[sym['pino.messageKey']] as string]) {
      if (serializers[key] !== undefined || stringifiers[key] !== undefined) return undefined;
    }
    const stream = l[sym['pino.stream']] as Destination | undefined;
    if (typeof stream?.write !== 'function') return undefined;
    if ((stream as unknown as Record<symbol, unknown>)[Symbol.for('pino.metadata')] === true) return undefined;
    return new PinoLines(l, sym, levels);
  }

  /** `false` while something subscribes to pino's `pino_asJson` tracing channel: it must see every line. */
  get usable(): boolean {
    return !asJsonTracing.hasSubscribers;
  }

  /**
   * The line pino would write for `logger[level](fields, message)`, given the fields already as
   * JSON members (`,"Key":value...`, or `''`). `message` must be a string.
   */
  line(level: string, members: string, message: string): string {
    return this.lineWithJsonMessage(level, members, JSON.stringify(message));
  }

  /** `line` for a message already encoded as a JSON string (quotes included). */
  lineWithJsonMessage(level: string, members: string, messageJson: string): string {
    const l = this.#logger;
    const prefix = l[this.#msgPrefix];
    const msg = typeof prefix === 'string' ? `"${JSON.stringify(prefix).slice(1, -1)}${messageJson.slice(1)}` : messageJson;
    const head = (l[this.#lsCache] as Record<number, string>)[this.#levels[level] as number] as string;
    const line = head + (l[this.#time] as () => string)() + (l[this.#chindings] as string) + members + this.#messageKey + msg + (l[this.#end] as string);
    const hook = this.#streamWrite;
    return hook === undefined ? line : hook(line);
  }

  /** Hands lines to the logger's destination (which may have changed since `create`). */
  write(lines: string): void {
    (this.#logger[this.#stream] as Destination).write(lines);
  }
}
