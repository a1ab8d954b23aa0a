// @test-lines: every - the PostgreSQL engine's driver suites: pg on this line
// The driver suites of the conformance (postgres-features.test.ts runs the others) on a real
// PostgreSQL server the test starts itself
// (Debian's binaries, a temporary directory, a free loopback port).
import { driverSuites } from './suite/conformance.ts';
import { postgresEngine } from './suite/engines.ts';
import { describePostgres } from '@kit/test-support/postgres';

describePostgres('PostgreSQL', () => {
  driverSuites(postgresEngine().engine);
});
