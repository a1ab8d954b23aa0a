// @test-lines: every - the PGlite engine's driver suites: its WASM driver on this line
// The driver suites of the conformance on PGlite, the embedded default (pglite-features.test.ts
// runs the others): one instance for the whole file (its WASM start-up takes seconds), handed to every app of the file.
import { driverSuites } from './suite/conformance.ts';
import { pgliteEngine } from './suite/engines.ts';
import { relationDefinitionSuite } from './suite/relations.ts';

driverSuites(pgliteEngine());
relationDefinitionSuite();
