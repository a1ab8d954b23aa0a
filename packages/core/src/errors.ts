/**
 * Kit errors carry a stable `code` (`KIT_ERR_…`) in the style of Fastify's `FST_ERR_…`, and a
 * message that names the option or class at fault and says how to fix it.
 *
 * @example
 * ```ts
 * try {
 *   await useKit(app);
 * } catch (err) {
 *   if (err instanceof KitError && err.code === 'KIT_ERR_DEPENDENCY') app.log.fatal(err.message);
 *   throw err;
 * }
 * ```
 */
export class KitError extends Error {
  /** Stable, documented error code such as `KIT_ERR_INVALID_OPTION`. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KitError';
    this.code = code;
  }
}

/** Formats a configuration value for an error message without flooding it. */
export function show(value: unknown): string {
  let text: string;
  if (value instanceof RegExp) text = String(value);
  else if (typeof value === 'function') text = `[function ${value.name || 'anonymous'}]`;
  else if (typeof value === 'string') text = JSON.stringify(value);
  else if (typeof value === 'number' || typeof value === 'bigint') text = String(value);
  else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/** `KIT_ERR_INVALID_OPTION`: a configuration value is out of range or of the wrong type. */
export function invalidOption(option: string, value: unknown, expected: string): KitError {
  return new KitError('KIT_ERR_INVALID_OPTION', `Invalid Kit option ${option} = ${show(value)}: expected ${expected}.`);
}
