// @kit/store-redis's error catalogue: the codes it adds, and the core codes it throws too. The
// table in docs/stores.md ("Errors") is generated from it (docs/test/error-catalogue.test.ts).
import { coreErrors } from '@kit/core';
import { errorCatalogue } from '@kit/core/extend';

/**
 * Every error code of `@kit/store-redis`: its own, and the ones of `@kit/core` it throws for the
 * same reasons (`KIT_ERR_STORE_UNAVAILABLE`, `KIT_ERR_INVALID_OPTION`, `KIT_ERR_NOT_ADDED`).
 *
 * @example
 * ```ts
 * const { when } = redisStoreErrors.codes.KIT_ERR_STORE_FAILED;
 * ```
 */
export const redisStoreErrors = errorCatalogue({
  KIT_ERR_STORE_UNAVAILABLE: {
    ...coreErrors.codes.KIT_ERR_STORE_UNAVAILABLE,
    when: 'Redis is down, frozen, loading, read-only or refusing the credentials, or a call got no reply within `commandTimeoutMs`',
  },
  KIT_ERR_STORE_FAILED: {
    message: 'Redis refused a store command: {reply}',
    when: 'Redis refused a command for another reason (e.g. `WRONGTYPE` on a key written by something else under the prefix)',
  },
  KIT_ERR_STORE_INVALID_ARGUMENT: coreErrors.codes.KIT_ERR_STORE_INVALID_ARGUMENT,
  KIT_ERR_SAGA_CONFLICT: coreErrors.codes.KIT_ERR_SAGA_CONFLICT,
  KIT_ERR_STORE_ALREADY_ADDED: {
    message: 'addKitStore(app, url) was called twice on the same Fastify instance.',
    when: '`addKitStore` called twice on one instance',
  },
  KIT_ERR_STORE_NOT_ADDED: {
    message: 'useKitStoreHealthCheck(app) needs addKitStore(app, url) first.',
    when: '`useKitStoreHealthCheck` without `addKitStore`',
  },
  KIT_ERR_STORE_TOO_LATE: {
    message:
      'addKitStore(app, url) was called after useKit(app) completed; call it between addKit and useKit.',
    when: '`addKitStore` after `useKit` completed',
  },
  KIT_ERR_NOT_ADDED: { when: '`addKitStore` on an instance without `addKit`' },
  KIT_ERR_DUPLICATE_HEALTH_CHECK: {
    when: '`useKitStoreHealthCheck` when a check named `redis` is registered already',
  },
  KIT_ERR_INVALID_OPTION: {
    when: '`addKitStore`/`createRedisStores` with an unparsable URL, a database index that is not a number, a database index or query string in a Cluster URL, Cluster or Sentinel URLs that mix schemes or credentials, a Sentinel master URL with a port, both `cluster` and `sentinels`, a bad timeout or `keyPrefix`. The URL is never echoed',
  },
});

declare module '@kit/core' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- declaration merging adds this package's codes
  interface KitErrorCodes extends Record<keyof typeof redisStoreErrors.codes, true> {}
}
