// What packages that extend Kit use besides the host's surface (index.ts): `@kit/core/extend`.
// A store implementation validates its arguments as the memory stores do (storeArguments); a
// plugin declares its error catalogue (errorCatalogue) and adds its codes to KitErrorCodes; a
// plugin that runs statements or calls out traces them through the tracer seam (getKitTracer); a
// plugin holding a process-wide resource (a lock file) releases it at exit through onProcessExit; a
// plugin that must act when the app is ready or as it closes joins a phase through onPhase
// (docs/lifecycle.md), never through Fastify's onReady/preClose/onClose hooks.
// Every name here is in api-report.md; a change to it is a visible diff there.
export { errorCatalogue, type KitErrorSpec, type KitErrorCatalogue } from './shared/errors.js';
export { storeArguments, type ResolvedRateLimitOptions } from './stores/arguments.js';
export {
  getKitTracer,
  KitSpanKind,
  type KitTracer,
  type KitSpan,
  type KitSpanAttributes,
} from './tracing/tracer.js';
export { onProcessExit } from './lifecycle/signals.js';
export { onPhase } from './kit/runtime.js';
export type { JoinablePhase } from './lifecycle/phases.js';
export { activeTraceId } from './audit/trace.js';
