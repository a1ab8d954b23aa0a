// @test-lines: once - maps errors to problem answers
// The HTTP status autoCrudErrors declares for each code is the one the generated routes answer:
// a route with the routes' error handler throws each of the mapper's errors.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import type { KitErrorSpec } from '@kit/core/extend';
import {
  autoCrudErrors,
  ConstraintViolationError,
  DatabaseBusyError,
  DatabaseUnavailableError,
  InvalidValueError,
  MissingReferenceError,
  SchemaMismatchError,
  StillReferencedError,
  StatementTimeoutError,
  UnrepresentableValueError,
  VersionConflictError,
} from '@kit/autocrud';
import { crudErrorHandler } from '../src/routes/problems.ts';
import {
  ClientGoneError,
  ForbiddenError,
  IdempotencyError,
  InvalidParameterError,
  NoEtagError,
  NotFoundError,
  NotJsonError,
  PreconditionRequiredError,
  TokenRequiredError,
} from '../src/routes/route-errors.ts';
import { Product } from './suite/fixtures.ts';

describe('autoCrudErrors: the declared status is the answered one', () => {
  it('for every error the mapper throws and the routes raise', async () => {
    const errors = [
      new DatabaseUnavailableError('connection refused'),
      new DatabaseBusyError(2000),
      new StatementTimeoutError(10_000),
      new ConstraintViolationError('unique'),
      new ConstraintViolationError('foreignKey'),
      new InvalidValueError(),
      new VersionConflictError(4),
      new MissingReferenceError('Order', 'customerId', 5, 'Customer'),
      new StillReferencedError('Customer', 1, 'Order', 'customerId', 7),
      new SchemaMismatchError('table products is missing'),
      new UnrepresentableValueError('Product', 'price', 'holds a value past 2^53-1'),
      new NotFoundError('Product', 'id', 7),
      new PreconditionRequiredError('Product'),
      new NoEtagError('Product'),
      new InvalidParameterError({
        in: 'querystring',
        name: 'pageSize',
        detail: 'must be an integer',
      }),
      new NotJsonError(),
      new TokenRequiredError(),
      ForbiddenError.operation('delete', 'Product'),
      new IdempotencyError('unavailable', 'Product'),
      new IdempotencyError('pending', 'Product', { retryAfterMs: 1500 }),
      new IdempotencyError('mismatch', 'Product'),
      new ClientGoneError(),
    ];
    const app = Fastify({ logger: false });
    app.get('/:i', { errorHandler: crudErrorHandler(Product, new Map()) }, async (req) => {
      throw errors[Number((req.params as { i: string }).i)];
    });
    const seen = new Set<string>();
    for (const [i, err] of errors.entries()) {
      const res = await app.inject(`/${i}`);
      const declared = (
        autoCrudErrors.codes[err.code as keyof typeof autoCrudErrors.codes] as KitErrorSpec
      ).status;
      assert.equal(res.statusCode, declared, `${err.code} (${err.name})`);
      assert.equal(err.httpStatus, declared, `${err.name} carries the status its code declares`);
      // A client gone is answered without a body: nobody is left to read it.
      if (err instanceof ClientGoneError) assert.equal(res.body, '');
      else assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
      seen.add(err.code);
    }
    const withStatus = Object.entries(autoCrudErrors.codes)
      .filter(([, spec]) => 'status' in spec)
      .map(([code]) => code);
    assert.deepEqual([...seen].sort(), withStatus.sort(), 'every code with a status was answered');
    await app.close();
  });
});
