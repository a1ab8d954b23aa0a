// The docs' error tables, generated from the packages' error catalogues. The tables sit between
// markers in the docs pages; docs/test/error-catalogue.test.ts fails when one differs from its
// catalogue. After changing a catalogue, write them anew:
//   node --conditions=kit-source --import tsx scripts/error-tables.ts --write   (npm run docs:errors)
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { coreErrors } from '@kit/core';
import type { KitErrorSpec } from '@kit/core/extend';
import { autoCrudErrors } from '@kit/autocrud';
import { redisStoreErrors } from '@kit/store-redis';

const root = fileURLToPath(new URL('../', import.meta.url));

/** Each package's catalogue, the file that declares it, and the docs page holding its table. */
export const CATALOGUES: ReadonlyArray<{
  readonly name: string;
  readonly source: string;
  readonly page: string;
  readonly codes: Readonly<Record<string, KitErrorSpec>>;
}> = [
  {
    name: '@kit/core',
    source: 'packages/core/src/shared/error-codes.ts',
    page: 'docs/grouping.md',
    codes: coreErrors.codes,
  },
  {
    name: '@kit/store-redis',
    source: 'packages/store-redis/src/errors.ts',
    page: 'docs/stores.md',
    codes: redisStoreErrors.codes,
  },
  {
    name: '@kit/autocrud',
    source: 'packages/autocrud/src/errors.ts',
    page: 'docs/autocrud/errors.md',
    codes: autoCrudErrors.codes,
  },
];

const END = '<!-- /error-table -->';
const start = (name: string): string => `<!-- error-table ${name}:`;

/** The markdown table of one catalogue, with its markers. */
export function renderTable(
  name: string,
  source: string,
  codes: Readonly<Record<string, KitErrorSpec>>,
): string {
  const rows = Object.entries(codes).map(
    ([code, spec]) => `| \`${code}\` | ${spec.status ?? ''} | ${spec.when} |`,
  );
  return [
    `${start(name)} generated from ${source} by \`npm run docs:errors\`; change the catalogue, not this table -->`,
    '| code | HTTP status | when |',
    '|---|---|---|',
    ...rows,
    END,
  ].join('\n');
}

/** The table of `name` as the page holds it now, or `undefined` when the page has no markers for it. */
export function tableInPage(text: string, name: string): string | undefined {
  const from = text.indexOf(start(name));
  if (from === -1) return undefined;
  const to = text.indexOf(END, from);
  return to === -1 ? undefined : text.slice(from, to + END.length);
}

if (process.argv.includes('--write')) {
  for (const c of CATALOGUES) {
    const file = `${root}${c.page}`;
    const text = readFileSync(file, 'utf8');
    const current = tableInPage(text, c.name);
    if (current === undefined)
      throw new Error(
        `${c.page} has no ${start(c.name)} ... ${END} markers: put them where the table goes`,
      );
    writeFileSync(file, text.replace(current, renderTable(c.name, c.source, c.codes)));
    console.log(`${c.page}: ${Object.keys(c.codes).length} codes of ${c.name}`);
  }
}
