/** One part of Node that changes from line to line, as a test's own code reaches it. */
export interface LinePart {
  readonly name: string;
  readonly pattern: RegExp;
}
/** What Node's line decides, as it appears in a test's own code. */
export declare const LINE_DEPENDENT: readonly LinePart[];
/** A test file's `@test-lines` directive, if it has one. */
export declare function lineDirective(
  file: string,
): { lines: 'every' | 'once'; why: string } | undefined;
/** What of LINE_DEPENDENT a file's own code reaches, and in which file. */
export declare function lineUses(file: string): { name: string; in: string }[];
