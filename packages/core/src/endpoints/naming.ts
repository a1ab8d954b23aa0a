import { EndpointFormat } from '../shared/enums.js';
import { KitError } from '../shared/errors.js';

/** The naming settings, compiled. */
export interface NamingRules {
  readonly format: EndpointFormat;
  readonly groupNameSuffixPattern: RegExp;
  readonly versionFormatPattern: RegExp;
  readonly versionFormatReplacement: string;
}

// esbuild renames colliding classes to `_Name` or `Name2`; minifiers to one or two letters.
// A version marker (`OrderV2`) is not a renaming.
const BUNDLER_RENAMED = /^_|^[A-Za-z_$][\w$]?$|(?:endpoint|service|controller)s?\d+$/i;

/**
 * Lowers the leading capital run the way JSON camel-casing does: `TestUser` -> `testUser`,
 * `HTTPServer` -> `httpServer`, `ABC` -> `abc`.
 */
function toCamelCase(name: string): string {
  const chars = [...name];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    if (c.toLowerCase() === c) break; // not an upper-case letter
    const next = chars[i + 1];
    if (i > 0 && next !== undefined && next.toLowerCase() === next && next.toUpperCase() !== next)
      break;
    chars[i] = c.toLowerCase();
  }
  return chars.join('');
}

/** `TestUser` -> `test_user`, `HTTPServer` -> `http_server`, `TestV2` -> `test_v2`. */
function toSnakeCase(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase();
}

/** Applies an `EndpointFormat` to a group name. */
function applyFormat(name: string, format: EndpointFormat): string {
  switch (format) {
    case EndpointFormat.CamelCase:
      return toCamelCase(name);
    case EndpointFormat.SnakeCase:
      return toSnakeCase(name);
    case EndpointFormat.ToLower:
      return name.toLowerCase();
    case EndpointFormat.UnChanged:
      return name;
  }
}

/**
 * Derives a group name from a class name: strip the suffix, rewrite the version marker, apply
 * the format. Refuses names a bundler has changed, since the URL would silently change with them.
 */
export function groupNameFromClass(className: string, rules: NamingRules): string {
  if (BUNDLER_RENAMED.test(className)) {
    throw new KitError(
      'KIT_ERR_CLASS_NAME',
      `Endpoint class name '${className}' looks changed by a bundler or minifier, so its group name would be wrong. ` +
        `Put @EndpointGroup('name') on the class, or keep class names when bundling (esbuild --keep-names, terser keep_classnames).`,
    );
  }
  const stripped = className.replace(rules.groupNameSuffixPattern, '');
  const versioned = stripped.replace(rules.versionFormatPattern, rules.versionFormatReplacement);
  const name = applyFormat(versioned, rules.format);
  if (!/^[A-Za-z0-9._~@-]+$/.test(name) || name === '.' || name === '..') {
    throw new KitError(
      'KIT_ERR_CLASS_NAME',
      `Endpoint class '${className}' gives the group name ${JSON.stringify(name)}, which is not one URL segment. ` +
        `Adjust groupNameSuffixPattern / versionFormatReplacement or put @EndpointGroup('name') on the class.`,
    );
  }
  return name;
}
