// @test-lines: once - Kit's statements and answers on PGlite; pglite.test.ts checks the driver on every line
// The feature suites of the conformance on PGlite (suite/conformance.ts says which are which): one
// instance for the whole file, handed to every app of the file.
import { featureSuites } from './suite/conformance.ts';
import { pgliteEngine } from './suite/engines.ts';

featureSuites(pgliteEngine());
