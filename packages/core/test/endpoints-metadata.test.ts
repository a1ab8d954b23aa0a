// @test-lines: once - endpoint mapping over inject
// Start-up reads what the decorators recorded on an endpoint class once: discovery hands the
// reading on to grouping, route mapping and the route contributors. Each class's decorator
// metadata (`Symbol.metadata`) is wrapped in a getter that counts the reads.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  EndpointGroup,
  KitEndpoint,
  KitHttpMethod,
  KitMethod,
  KitRouteContributor,
  KitTag,
  type IKitEndpoint,
} from '@kit/core';
import { kitApp, openApiOf } from './helpers.js';

class PlainEndpoint implements IKitEndpoint {
  addRoutes(app: FastifyInstance) {
    app.get('', async () => ({ plain: true }));
  }
}

@EndpointGroup('tagged')
@KitTag('Tagged')
class TaggedEndpoint implements IKitEndpoint {
  addRoutes(app: FastifyInstance) {
    app.get('one', async () => ({ tagged: true }));
  }
}

@KitRouteContributor(() => [{ method: 'GET', url: 'ping', handler: async () => 'pong' }])
class ContributedEndpoint {}

@KitEndpoint()
class LegacyEndpoint {
  @KitMethod('old', KitHttpMethod.GET)
  old(_request: FastifyRequest, reply: FastifyReply) {
    return reply.send({ legacy: true });
  }
}

const classes = { PlainEndpoint, TaggedEndpoint, ContributedEndpoint, LegacyEndpoint };

/** Replaces each class's metadata with a getter that counts its reads; returns the counts. */
function countMetadataReads(): Record<string, number> {
  const reads: Record<string, number> = {};
  for (const [name, cls] of Object.entries(classes)) {
    const metadata: unknown = (cls as { [Symbol.metadata]?: unknown })[Symbol.metadata];
    reads[name] = 0;
    Object.defineProperty(cls, Symbol.metadata, {
      configurable: true,
      get() {
        reads[name] = (reads[name] as number) + 1;
        return metadata;
      },
    });
  }
  return reads;
}

describe('endpoint metadata at start-up', () => {
  it('is read once per class, whether the class is named directly, in a namespace, or both', async (t) => {
    const reads = countMetadataReads();
    t.mock.method(process, 'emitWarning', () => undefined); // the @KitEndpoint deprecation warning
    // LegacyEndpoint and PlainEndpoint are named twice: once as a class, once in a namespace object.
    const app = await kitApp([PlainEndpoint, LegacyEndpoint, { ...classes }]);
    try {
      assert.deepEqual(reads, {
        PlainEndpoint: 1,
        TaggedEndpoint: 1,
        ContributedEndpoint: 1,
        LegacyEndpoint: 1,
      });
      // The single reading carried everything: groups, tags, legacy routes, contributed routes.
      const paths = Object.keys((await openApiOf(app)).paths).sort();
      assert.deepEqual(paths, [
        '/api/contributed/ping',
        '/api/legacy/old',
        '/api/plain',
        '/api/tagged/one',
      ]);
      assert.deepEqual((await openApiOf(app)).paths['/api/tagged/one']?.get?.tags, ['Tagged']);
      assert.equal((await app.inject('/api/contributed/ping')).body, 'pong');
      assert.deepEqual((await app.inject('/api/legacy/old')).json(), { legacy: true });
    } finally {
      await app.close();
    }
  });
});
