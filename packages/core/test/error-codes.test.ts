// @test-lines: once - compiler: KitErrorCode programs that must or must not compile (lineIndependent)
// core's error catalogue and KitErrorCode: messages filled from the catalogue's templates, the
// status of the errors that carry one, and TypeScript refusing a code no imported catalogue
// declares (the compiler runs on small programs against the built packages).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { coreErrors, KitError, SagaConflictError, StoreUnavailableError } from '@kit/core';
import { errorCatalogue } from '@kit/core/extend';
import { lineIndependent } from '@kit/test-support/heavy';
import { compileStrict } from '@kit/test-support/typescript';

/** Compiles `source` strictly against the built packages; the compiler's output when it fails. */
const compile = async (source: string): Promise<string> => (await compileStrict(source)).output;

describe('the error catalogue', () => {
  it('fills a template, keeps the code and the cause, and refuses a code it has no template for', () => {
    const cause = new Error('underlying');
    const err = coreErrors.error('KIT_ERR_WARMUP_TIMEOUT', { timeoutMs: 250 }, { cause });
    assert.ok(err instanceof KitError);
    assert.equal(err.code, 'KIT_ERR_WARMUP_TIMEOUT');
    assert.equal(
      err.message,
      'Warm-up did not finish within warmupTimeoutMs (250 ms). Raise opt.warmupTimeoutMs or make the tasks faster.',
    );
    assert.equal(err.cause, cause);
    assert.equal(
      coreErrors.error('KIT_ERR_ALREADY_ADDED').message,
      'addKit(app) was called twice on the same Fastify instance.',
    );
    // A value that looks like a placeholder is inserted as it is, not filled again.
    assert.equal(
      coreErrors.message('KIT_ERR_INVALID_TAG', { tag: '{tag}' }),
      '@KitTag({tag}): a tag must be a non-empty string.',
    );
    const local = errorCatalogue({ KIT_ERR_DEPENDENCY: { when: 'composed where thrown' } });
    assert.throws(
      () => (local.error as (code: string) => KitError)('KIT_ERR_DEPENDENCY'),
      /has no message template/,
    );
  });

  it("the errors that carry an HTTP status carry the catalogue's", () => {
    assert.equal(
      new StoreUnavailableError('redis', 'down').statusCode,
      coreErrors.codes.KIT_ERR_STORE_UNAVAILABLE.status,
    );
    assert.equal(
      new SagaConflictError('s', 1, 2).statusCode,
      coreErrors.codes.KIT_ERR_SAGA_CONFLICT.status,
    );
  });
});

lineIndependent('KitErrorCode (TypeScript compiler)', () => {
  describe('KitErrorCode (TypeScript compiler)', () => {
    it(
      'accepts the codes of the packages a program imports and refuses any other',
      { timeout: 120_000 },
      async () => {
        const uses = `
        declare const err: KitError;
        export const core = err.code === 'KIT_ERR_DEPENDENCY';
        export const made = new KitError('KIT_ERR_INVALID_OPTION', 'fine');
        export const others = err.code === 'KIT_ERR_DATABASE_BUSY' || err.code === 'KIT_ERR_STORE_FAILED';
      `;
        // Two programs, as each compile takes seconds: all packages imported (everything compiles),
        // and core alone with two misspelt codes.
        assert.equal(
          await compile(
            `import { KitError } from '@kit/core';\nimport '@kit/autocrud';\nimport '@kit/store-redis';\n${uses}`,
          ),
          '',
          'the codes of every imported package compile',
        );
        const coreAlone = await compile(
          `import { KitError } from '@kit/core';\n${uses}\nexport const typo = err.code === 'KIT_ERR_DEPENDENCIES';\nexport const made2 = new KitError('KIT_ERR_NOPE', 'x');`,
        );
        assert.match(
          coreAlone,
          /TS2367.*KIT_ERR_DEPENDENCIES/,
          'a comparison with a misspelt code fails',
        );
        assert.match(
          coreAlone,
          /TS2345.*KIT_ERR_NOPE/,
          'constructing one with an undeclared code fails',
        );
        assert.match(
          coreAlone,
          /TS2367.*KIT_ERR_DATABASE_BUSY/,
          "AutoCrud's codes are unknown without its package",
        );
        assert.doesNotMatch(
          coreAlone,
          /KIT_ERR_DEPENDENCY'|KIT_ERR_INVALID_OPTION/,
          "core's own codes are fine",
        );
      },
    );
  });
});
