// @test-lines: every - the PGlite engine's conformance suite: the driver on this line
// The conformance and hostile-input suites on PGlite, the embedded default: one instance for the
// whole file (its WASM start-up takes seconds), handed to every app of the file.
import { conformanceSuites } from './suite/conformance.ts';
import { pgliteEngine } from './suite/engines.ts';
import { relationDefinitionSuite } from './suite/relations.ts';

conformanceSuites(pgliteEngine());
relationDefinitionSuite();
