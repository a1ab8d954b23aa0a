// @test-lines: once - compiler: the API reports come from the TypeScript compiler (lineIndependent)
// The public surface of every package, as scripts/api-report.ts writes it (packages/*/api-report.md):
// the committed report must be what the sources export, so that a change to the surface is a
// visible diff (a removed name is a breaking change for the CHANGELOG); and every exported name has
// TSDoc with an @example.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { lineIndependent } from '@kit/test-support/heavy';
import { surface } from '../../../scripts/api-report.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));

// The TypeScript compiler's reading of the sources: the same on every Node line.
lineIndependent('the public API reports', () => {
  describe('the public API reports', () => {
    const reports = surface();

    for (const { report, text } of reports) {
      it(`${report} is what the entry points export (npm run api:report writes it)`, () => {
        assert.equal(
          readFileSync(path.join(root, report), 'utf8'),
          text,
          `${report} differs from the exports: review the change, then run npm run api:report`,
        );
      });
    }

    it('every exported name has TSDoc with an @example', () => {
      assert.deepEqual(
        reports.flatMap((r) => r.undocumented),
        [],
      );
    });
  });
});
