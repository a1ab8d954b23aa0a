import type { EngineUnderTest } from './fixtures.ts';
export function upsertSuite(_engine: EngineUnderTest): void {}
