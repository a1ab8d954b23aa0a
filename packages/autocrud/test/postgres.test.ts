// @test-lines: every - the PostgreSQL engine's conformance suite: pg on this line
// The conformance and hostile-input suites on a real PostgreSQL server the test starts itself
// (Debian's binaries, a temporary directory, a free loopback port).
import { conformanceSuites } from './suite/conformance.ts';
import { postgresEngine } from './suite/engines.ts';
import { describePostgres } from '@kit/test-support/postgres';

describePostgres('PostgreSQL', () => {
  conformanceSuites(postgresEngine().engine);
});
