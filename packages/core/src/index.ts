// The public surface of @kit/core for a host application, and nothing else. What packages that
// extend Kit need besides (store implementations, error catalogues) is in extend.ts
// (`@kit/core/extend`). Every name here is in api-report.md; a change to it is a visible diff there.

// Kit registers @fastify/swagger, whose types add `summary`, `tags`, `hide`… to Fastify's route
// schema. tsc only copies a reference into the declarations it emits when asked (`preserve`);
// without it a host compiling against dist/ gets TS2353 on `schema: { summary }`.
/// <reference types="@fastify/swagger" preserve="true" />
export { addKit, useKit, type KitConfigure, type HostInstance } from './kit/kit.js';
export {
  KitOption,
  type IWarmup,
  type WarmupTask,
  type OpenApiInfo,
  type ResolvedKitOptions,
} from './kit/options.js';
export type { KitInstance, KitAudit } from './kit/runtime.js';
export type { ShutdownPhase } from './lifecycle/phases.js';
export { KitError, coreErrors, type KitErrorCode, type KitErrorCodes } from './shared/errors.js';
export { sendProblem, type ProblemDetails } from './problem/details.js';
export type { ProblemValidationError } from './problem/errors.js';
export { PROBLEM_DETAILS_SCHEMA } from './problem/openapi.js';
export {
  EndpointFormat,
  HealthCheckDetailLevel,
  AuditTrailFormat,
  KitHttpMethod,
  type KitState,
} from './shared/enums.js';
export type { KitServices, ServiceClass } from './shared/services.js';

export type { IKitEndpoint, EndpointApp, EndpointClass } from './endpoints/types.js';
export type { EndpointSource } from './endpoints/discovery.js';
export {
  EndpointGroup,
  KitTag,
  KitEndpoint,
  KitMethod,
  type EndpointGroupOptions,
} from './endpoints/decorators.js';
export type { SecuritySchemeObject } from './shared/security-schemes.js';
export { KitRouteContributor } from './endpoints/contributors.js';
export type {
  PlannedEndpoint,
  RouteContributor,
  RouteContributorContext,
} from './endpoints/types.js';

export {
  AuditTrailOptions,
  AUDIT_QUEUE_CAPACITY,
  DEFAULT_REDACT_HEADERS,
  DEFAULT_REDACT_QUERY_PARAMS,
  type AuditLogLevel,
} from './audit/options.js';
export type { AuditLogEntry, AuditDetailValue, IAuditSink, AuditStats } from './audit/entry.js';
export { setAuditDetail } from './audit/record-slot.js';
export { LoggingAuditSink, type LoggingAuditSinkOptions } from './audit/sinks.js';
export { getCorrelationId } from './audit/correlation.js';
export { getRequestCorrelationId } from './audit/request-correlation.js';

export {
  HealthChecksBuilder,
  type HealthCheckFunction,
  type HealthCheckOptions,
  type HealthCheckSource,
  type HealthCheckClass,
  type HealthCheckRegistration,
} from './health/builder.js';
export {
  HealthCheckResult,
  type HealthStatus,
  type HealthCheckContext,
  type IHealthCheck,
} from './health/result.js';
export { GracefulShutdownOptions } from './lifecycle/shutdown-options.js';
export { MetricsOptions, type PrometheusRegistry } from './metrics/options.js';
export type { HealthReport, HealthReportEntry } from './health/report.js';
export type { UptimeClock } from './health/uptime.js';
export type { JwtOptions } from './auth/options.js';
export type { KitAuthenticateHook } from './auth/authenticate.js';
export type { KitUser } from './auth/verifier.js';

export type {
  JsonValue,
  IIdempotencyStore,
  IdempotencyReserveOptions,
  IdempotencyCompleteOptions,
  IdempotencyReservation,
  IRateLimitStore,
  RateLimitAlgorithm,
  RateLimitOptions,
  RateLimitResult,
  ISagaStore,
  SagaState,
  SagaWriteOptions,
  ICronJobStore,
  CronLock,
} from './stores/types.js';
export { SagaConflictError, StoreUnavailableError } from './stores/errors.js';
export {
  kitRateLimitStore,
  type KitRateLimitStoreOptions,
  type RateLimitPluginStore,
  type RateLimitPluginStoreClass,
  type RateLimitStoreSource,
} from './stores/fastify-rate-limit.js';
export {
  KitStoreNames,
  MemoryRateLimitStore,
  MemorySagaStore,
  MemoryCronJobStore,
} from './stores/memory.js';
export {
  MemoryIdempotencyStore,
  MEMORY_IDEMPOTENCY_DEFAULTS,
  type MemoryIdempotencyStoreOptions,
  type MemoryIdempotencyStoreStats,
} from './stores/memory-idempotency.js';
