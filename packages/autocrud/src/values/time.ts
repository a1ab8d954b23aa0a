// RFC 3339 timestamps and full dates, read and written with plain integer arithmetic: no `Date`,
// so nothing depends on the process's time zone, and microseconds are kept (a `Date` holds
// milliseconds). Kit's one form of a timestamp is `YYYY-MM-DDTHH:MM:SS.ffffffZ`: UTC, six
// fraction digits, the same length for every value, so that its text order is its time order.

const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2})(?::?(\d{2}))?)$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** Kit's form of a timestamp (see the top of this file). */
export const CANONICAL_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

const SECONDS_PER_DAY = 86_400;

function isLeapYear(year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
}

function daysInMonth(year: number, month: number): number {
  return month === 2 ? (isLeapYear(year) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;
}

// Days from 1970-01-01 to a proleptic Gregorian date and back (H. Hinnant's civil algorithms).
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

function civilFromDays(days: number): [number, number, number] {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return [era * 400 + yoe + (month <= 2 ? 1 : 0), month, day];
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** Why a date-time cannot be taken; what the answers call the accepted range. */
export const DATE_TIME_RANGE =
  'an RFC 3339 date-time with an offset (Z or ±hh:mm) between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z';

/**
 * An RFC 3339 date-time with an offset (the grammar ajv-formats' `date-time` accepts) in Kit's
 * form: UTC, rounded to the microsecond (half up). `undefined` when it is not one, or falls
 * outside years 1 to 9999 once in UTC (PostgreSQL has no year 0, and RFC 3339 no year 10000).
 */
export function canonicalDateTime(text: string): string | undefined {
  const m = DATE_TIME.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(
    Number,
  ) as [number, number, number, number, number, number];
  if (
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > daysInMonth(year, month) ||
    hour > 23 ||
    minute > 59 ||
    second > 60
  )
    return undefined;
  let offset = 0;
  if (m[8] !== undefined) {
    const oh = Number(m[9]);
    const om = Number(m[10] ?? 0);
    if (oh > 23 || om > 59) return undefined;
    offset = (m[8] === '-' ? -1 : 1) * (oh * 3600 + om * 60);
  }
  let seconds =
    daysFromCivil(year, month, day) * SECONDS_PER_DAY + hour * 3600 + minute * 60 + second - offset;
  // A leap second is only 23:59:60 in UTC (as ajv-formats checks); PostgreSQL rolls it into the next minute.
  if (
    second === 60 &&
    (((seconds - 60) % SECONDS_PER_DAY) + SECONDS_PER_DAY) % SECONDS_PER_DAY !==
      SECONDS_PER_DAY - 60
  )
    return undefined;
  const digits = m[7] ?? '';
  let micros = Number(digits.slice(0, 6).padEnd(6, '0'));
  if (digits.length > 6 && digits.charCodeAt(6) >= 0x35 /* '5' */) micros += 1;
  if (micros === 1_000_000) {
    micros = 0;
    seconds += 1;
  }
  return formatDateTime(seconds, micros);
}

/** Seconds since 1970-01-01T00:00:00Z and microseconds in Kit's form; `undefined` outside years 1 to 9999. */
function formatDateTime(seconds: number, micros: number): string | undefined {
  const days = Math.floor(seconds / SECONDS_PER_DAY);
  const inDay = seconds - days * SECONDS_PER_DAY;
  const [year, month, day] = civilFromDays(days);
  if (year < 1 || year > 9999) return undefined;
  const time = `${pad(Math.floor(inDay / 3600), 2)}:${pad(Math.floor((inDay % 3600) / 60), 2)}:${pad(inDay % 60, 2)}`;
  return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}T${time}.${pad(micros, 6)}Z`;
}

/**
 * A timestamp as PostgreSQL's JSON encoding writes a `timestamp` (`2024-06-01T10:00:00.5`, the
 * fraction's trailing zeros dropped), in Kit's form; `undefined` for what has none (infinity,
 * years before 1 or after 9999).
 */
export function dateTimeFromIso(text: string): string | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/.exec(text);
  if (!m) return undefined;
  return `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}.${(m[7] ?? '').padEnd(6, '0')}Z`;
}

/** A full date (`YYYY-MM-DD`, a real day of years 1 to 9999) as given; `undefined` when it is not one. */
export function canonicalDate(text: string): string | undefined {
  const m = DATE.exec(text);
  if (!m) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month))
    return undefined;
  return text;
}
