// @test-lines: once - an old-style endpoint class mapped through inject
// The deprecated attribute style (@KitEndpoint / @KitMethod) is shown here, in a test, not in the
// sample a newcomer starts: `npm start` prints no deprecation warning. A class in this style still
// works, and says once that it is deprecated (DeprecationWarning KIT_DEP_KIT_ENDPOINT).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { addKit, useKit } from '@kit/core';
import { LegacyReportsEndpoint } from './fixtures/LegacyReportsEndpoint.js';

describe('an old-style @KitEndpoint class', () => {
  it('serves its @KitMethod routes and warns once, with KIT_DEP_KIT_ENDPOINT', async (t) => {
    const warnings: Array<{ message: string; code: unknown }> = [];
    t.mock.method(
      process,
      'emitWarning',
      (message: string, options?: { code?: string }) =>
        void warnings.push({ message, code: options?.code }),
    );
    for (let i = 0; i < 2; i++) {
      const app = Fastify();
      addKit(app, [LegacyReportsEndpoint]);
      await useKit(app);
      const res = await app.inject('/api/legacyReports/daily/mon');
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.json(), { day: 'mon', orders: 2, revenueCents: 5700 });
      await app.close();
    }
    assert.equal(warnings.length, 1, 'once per class, not per app');
    assert.equal(warnings[0]?.code, 'KIT_DEP_KIT_ENDPOINT');
    assert.match(
      warnings[0]?.message ?? '',
      /LegacyReportsEndpoint uses the attribute-based endpoint style/,
    );
  });
});
