// @test-lines: once - compiler: typed routes that must or must not compile (lineIndependent)
// Runs the TypeScript compiler on types/type-providers.ts (TypeBox and Zod schemas typing
// request and reply inside addRoutes), and on a copy typed with a plain FastifyInstance, where the
// provider is lost: that copy must fail, or the type-level test could not catch a regression.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { lineIndependent } from '@kit/test-support/heavy';
import { compileStrict } from '@kit/test-support/typescript';

const here = path.dirname(fileURLToPath(import.meta.url));
const compile = (source: string) => compileStrict(source, 'endpoints.ts');

lineIndependent('typed routes with a type provider (TypeScript compiler)', () => {
  describe('typed routes with a type provider (TypeScript compiler)', () => {
    it(
      "IKitEndpoint<P> and EndpointApp<P> keep TypeBox's and Zod's inference in addRoutes",
      { timeout: 120_000 },
      async () => {
        const source = await readFile(path.join(here, 'types', 'type-providers.ts'), 'utf8');
        const typed = await compile(source);
        assert.ok(typed.ok, typed.output);

        // The same endpoints with the provider dropped, as `addRoutes(app: FastifyInstance)` does.
        const lost = source
          .replace(
            "import type { EndpointApp, IKitEndpoint } from '@kit/core';",
            "import type { FastifyInstance } from 'fastify';\nimport type { IKitEndpoint } from '@kit/core';",
          )
          .replaceAll(/IKitEndpoint<\w+>/g, 'IKitEndpoint')
          .replaceAll(/EndpointApp<\w+>/g, 'FastifyInstance');
        assert.notEqual(lost, source);
        const untyped = await compile(lost);
        assert.equal(untyped.ok, false, 'without the provider the type-level assertions must fail');
        assert.match(untyped.output, /error TS/);
        assert.match(
          untyped.output,
          /Unused '@ts-expect-error' directive|is not assignable|unknown/,
        );
      },
    );
  });
});
