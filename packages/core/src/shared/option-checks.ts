import { invalidOption } from './errors.js';

// Checks of single option values, shared by resolveOptions; each failure is KIT_ERR_INVALID_OPTION.

// Fastify gives ':' '*' '(' ')' a meaning in paths; '.' and '..' segments are not paths at all.
const SEGMENT = "(?!\\.\\.?(?:/|$))[A-Za-z0-9._~@!$&'+,;=-]+";
export const PATH = new RegExp(`^(/${SEGMENT})+$`);

export function compile(option: string, value: unknown, flags: string): RegExp {
  if (value instanceof RegExp) {
    // With g or y a RegExp remembers where its last match ended: every other class name would be
    // matched from the wrong place.
    if (value.global || value.sticky)
      throw invalidOption(option, value, 'a pattern string, or a RegExp without the g or y flag');
    return value;
  }
  if (typeof value !== 'string' || value.length === 0)
    throw invalidOption(option, value, 'a regular expression or a non-empty pattern string');
  try {
    return new RegExp(value, flags);
  } catch (err) {
    throw invalidOption(option, value, `a valid regular expression (${(err as Error).message})`);
  }
}

export function checkPath(option: string, value: unknown): string {
  if (typeof value !== 'string' || !PATH.test(value)) {
    throw invalidOption(
      option,
      value,
      'an absolute path such as "/healthz" (no query, fragment, spaces or trailing "/")',
    );
  }
  return value;
}

export function oneOf<T extends string>(
  option: string,
  value: unknown,
  values: Record<string, T>,
): T {
  const allowed = Object.values(values);
  if (!allowed.includes(value as T))
    throw invalidOption(option, value, `one of ${allowed.join(', ')}`);
  return value as T;
}

/** The paths Kit serves outside the endpoint groups must not be equal or nested in one another. */
export function checkDistinctPaths(
  paths: readonly string[],
  healthCheckPath: string,
  metricsPath: string | undefined,
): void {
  for (const [i, a] of paths.entries()) {
    for (const b of paths.slice(i + 1)) {
      if (a.toLowerCase() === b.toLowerCase() || b.startsWith(`${a}/`) || a.startsWith(`${b}/`)) {
        const option =
          a === healthCheckPath || b === healthCheckPath
            ? 'healthCheckPath'
            : a === metricsPath || b === metricsPath
              ? 'metrics.path'
              : 'openApiPath';
        throw invalidOption(
          option,
          `${a} and ${b}`,
          'distinct paths for the health report, /livez, the OpenAPI document, the reference UI and the metrics',
        );
      }
    }
  }
}
