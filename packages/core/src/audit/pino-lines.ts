// Audit lines written straight to a pino logger's destination, byte for byte what pino would write.
//
// pino serialises a log call generically: every key of the merging object goes through a
// serializer lookup, a stringifier lookup and a type switch, and the message is escaped again, and
// each call is one write to the destination. An audit line has a fixed shape, so Kit builds its
// JSON with a few `JSON.stringify` calls and hands a whole batch of lines to the destination in one
// write; from the logger it borrows only what makes a line that logger's: the level prefix, the
// timestamp, the bindings, the message key and prefix, the line end and the destination (read
// through `internals/`, which says what happens when pino changes them). What this saves per entry
// is measured in docs/decisions.md.
//
// Kit takes this path only when the result is the line pino itself would write. Anything that
// makes a line depend on more than that (a mixin, `formatters.log`, redaction, a serializer or a
// stringifier for one of the audit keys, `nestedKey`, a `logMethod` or `streamWrite` hook, a
// destination that reads per-line metadata such as `pino.multistream`, a subscriber to pino's
// `pino_asJson` tracing channel), or a pino whose internals are not the expected ones, keeps the
// ordinary `logger[level](fields, message)` call. `audit-pino-lines.test.ts` compares both paths
// for each case.
import { tracingChannel } from 'node:diagnostics_channel';
import type { FastifyBaseLogger } from 'fastify';
import { pinoLoggerState, type PinoDestination, type PinoLoggerState } from '../internals/index.js';

const asJsonTracing = tracingChannel('pino_asJson');

/** What the lines of one write share (`PinoLines.head`). */
export interface LineHead {
  /** `,"time":…` (or `''`) and the logger's bindings (`,"pid":…,"hostname":"…"`). */
  readonly tail: string;
  /** The child logger's `msgPrefix` as it goes inside the message's JSON string, or `undefined`. */
  readonly prefix: string | undefined;
}

/**
 * Writes complete audit lines for one pino logger. `create` returns `undefined` when the logger's
 * configuration needs pino's generic path.
 */
export class PinoLines {
  readonly #state: PinoLoggerState;
  readonly #levels: Readonly<Record<string, number>>;
  /** `,"msg":` for pino's default message key. */
  readonly #messageKey: string;

  private constructor(state: PinoLoggerState, levels: Readonly<Record<string, number>>) {
    this.#state = state;
    this.#levels = levels;
    this.#messageKey = `,${JSON.stringify(state.messageKey)}:`;
  }

  /**
   * A line writer for `logger`, or `undefined` when `fieldKeys` (the keys of the structured
   * fields) or the logger's configuration could make pino's line differ from Kit's.
   */
  static create(logger: FastifyBaseLogger, fieldKeys: readonly string[]): PinoLines | undefined {
    const state = pinoLoggerState(logger);
    const levels = (logger as { levels?: { values?: Record<string, number> } }).levels?.values;
    if (state === undefined || typeof levels !== 'object' || levels === null) return undefined;
    if (
      state.mixin ||
      state.nestedKey ||
      state.formatters.log ||
      state.hooks.logMethod ||
      state.hooks.streamWrite
    )
      return undefined;
    // Redaction installs stringifiers (a wildcard one for `*` paths); the message key counts too.
    if (Object.getOwnPropertySymbols(state.stringifiers).length > 0) return undefined;
    for (const key of [...fieldKeys, state.messageKey]) {
      if (state.serializers[key] !== undefined || state.stringifiers[key] !== undefined)
        return undefined;
    }
    const destination = state.destination();
    if (
      destination === undefined ||
      (destination as unknown as Record<symbol, unknown>)[Symbol.for('pino.metadata')] === true
    )
      return undefined;
    return new PinoLines(state, levels);
  }

  /** `false` while something subscribes to pino's `pino_asJson` tracing channel: it must see every line. */
  get usable(): boolean {
    return !asJsonTracing.hasSubscribers;
  }

  /**
   * What the lines of one write share, read from the logger once for all of them: the time (the
   * moment the lines are written, as pino's is the moment of the call), the bindings and the
   * child logger's message prefix.
   */
  head(): LineHead {
    const s = this.#state;
    const prefix = s.msgPrefix();
    return {
      tail: s.time() + s.chindings(),
      prefix: prefix === undefined ? undefined : JSON.stringify(prefix).slice(1, -1),
    };
  }

  /**
   * The line pino would write for `logger[level](fields, message)`, given the fields already as
   * JSON members (`,"Key":value...`, or `''`). `message` must be a string.
   */
  line(level: string, members: string, message: string, head: LineHead = this.head()): string {
    return this.lineWithJsonMessage(level, members, JSON.stringify(message), head);
  }

  /** `line` for a message already encoded as a JSON string (quotes included). */
  lineWithJsonMessage(
    level: string,
    members: string,
    messageJson: string,
    head: LineHead = this.head(),
  ): string {
    const msg = head.prefix === undefined ? messageJson : `"${head.prefix}${messageJson.slice(1)}`;
    const s = this.#state;
    return (
      (s.levelHead(this.#levels[level] as number) as string) +
      head.tail +
      members +
      this.#messageKey +
      msg +
      s.end
    );
  }

  /** Hands lines to the logger's destination (which may have changed since `create`). */
  write(lines: string): void {
    (this.#state.destination() as PinoDestination).write(lines);
  }
}
