// @test-lines: once - the UUID generator
// Correlation ids Kit generates itself (src/audit/uuid.ts): random version 4 UUIDs, made in
// batches of 128, so the tests cross batch boundaries.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newUuid } from '../src/audit/uuid.js';

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('generated correlation ids', () => {
  it('are version 4 UUIDs, all different, across many batches', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const id = newUuid();
      assert.match(id, V4);
      seen.add(id);
    }
    assert.equal(seen.size, 20_000);
  });

  it('are random in every position but the version and variant bits', () => {
    // Over 4,096 ids each hex digit of a random position takes all 16 values, and the variant
    // digit all four of 8, 9, a, b; a counter or a fixed prefix would not.
    const ids = Array.from({ length: 4096 }, newUuid);
    for (let pos = 0; pos < 36; pos++) {
      if ([8, 13, 18, 23, 14].includes(pos)) continue; // dashes and the version digit
      const values = new Set(ids.map((id) => id[pos]));
      assert.equal(
        values.size,
        pos === 19 ? 4 : 16,
        `position ${pos}: ${[...values].sort().join('')}`,
      );
    }
  });

  it('do not change once handed out (the batch buffer is reused)', () => {
    const first = Array.from({ length: 300 }, newUuid);
    const copy = first.map((id) => `${id}`);
    for (let i = 0; i < 1000; i++) newUuid();
    assert.deepEqual(first, copy);
  });
});
