/**
 * A clock for the health report's `uptime`: milliseconds since the process started.
 *
 * @example
 * ```ts
 * // a fixed clock, e.g. in a test: the report then says "27:03:04"
 * addKit(app, (opt) => { opt.uptimeClock = () => (27 * 3600 + 3 * 60 + 4) * 1000; });
 * ```
 */
export type UptimeClock = () => number;

/**
 * The default clock: `process.uptime()`, which counts from process start (not from `useKit`), so a
 * report during start-up says how long the process has been trying to start.
 */
export const processUptimeClock: UptimeClock = () => process.uptime() * 1000;

function two(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

/**
 * Formats milliseconds as `hh:mm:ss`. Hours are not wrapped at 24 (`27:03:04`, `100:00:00`), so the
 * value stays sortable and needs no day part; fractions of a second are dropped, and a clock that
 * answers a negative or non-finite value reads as `00:00:00` rather than breaking the report.
 *
 * @example
 * ```ts
 * formatUptime(97_384_000); // '27:03:04'
 * ```
 */
export function formatUptime(ms: number): string {
  const total = Number.isFinite(ms) && ms > 0 ? Math.floor(ms / 1000) : 0;
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  return `${two(hours)}:${two(minutes)}:${two(total % 60)}`;
}
