// @test-lines: once - Kit's statements and answers on PostgreSQL; postgres.test.ts checks pg on every line
// The feature suites of the conformance (suite/conformance.ts says which are which) on a real
// PostgreSQL server the test starts itself (Debian's binaries, a temporary directory, a free
// loopback port).
import { featureSuites } from './suite/conformance.ts';
import { postgresEngine } from './suite/engines.ts';
import { describePostgres } from '@kit/test-support/postgres';

describePostgres('PostgreSQL', () => {
  featureSuites(postgresEngine().engine);
});
