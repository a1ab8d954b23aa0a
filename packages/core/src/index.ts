// The public surface of @kit/core, and nothing else.

// Kit registers @fastify/swagger, whose types add `summary`, `tags`, `hide`… to Fastify's route
// schema. tsc only copies a reference into the declarations it emits when asked (`preserve`);
// without it a host compiling against dist/ gets TS2353 on `schema: { summary }`.
/// <reference types="@fastify/swagger" preserve="true" />
export { addKit, useKit, type KitConfigure, type HostInstance } from './kit.js';
export { KitOption, type IWarmup, type WarmupTask, type OpenApiInfo, type ResolvedKitOptions } from './options.js';
export type { KitInstance, KitAudit } from './runtime.js';
export { KitError } from './errors.js';
export { sendProblem, PROBLEM_JSON, type ProblemDetails } from './problem/details.js';
export type { ProblemValidationError } from './problem/errors.js';
export { PROBLEM_DETAILS_SCHEMA } from './problem/openapi.js';
export { EndpointFormat, HealthCheckDetailLevel, AuditTrailFormat, KitHttpMethod, type KitState } from './enums.js';
export type { KitServices, ServiceClass } from './services.js';

export type { IKitEndpoint, EndpointApp, EndpointClass } from './endpoints/types.js';
export type { EndpointSource } from './endpoints/discovery.js';
export { EndpointGroup, KitTag, KitEndpoint, KitMethod, type EndpointGroupOptions } from './endpoints/decorators.js';
export type { SecuritySchemeObject } from './openapi/security.js';
export { operationIdFor } from './endpoints/operation-ids.js';
export { KitRouteContributor, type RouteContributor, type RouteContributorContext } from './endpoints/contributors.js';

export { AuditTrailOptions, AUDIT_QUEUE_CAPACITY, DEFAULT_REDACT_HEADERS, DEFAULT_REDACT_QUERY_PARAMS, type AuditLogLevel } from './audit/options.js';
export type { AuditLogEntry, IAuditSink, AuditStats } from './audit/entry.js';
export { LoggingAuditSink, type LoggingAuditSinkOptions } from './audit/sinks.js';
export { getCorrelationId, CORRELATION_ID_PATTERN } from './audit/correlation.js';
export { AUDIT_PATH_CAP, AUDIT_QUERY_CAP, AUDIT_HEADER_VALUE_CAP, REDACTED, TRUNCATED_MARKER } from './audit/redaction.js';

export {
  HealthChecksBuilder,
  type HealthCheckFunction,
  type HealthCheckOptions,
  type HealthCheckSource,
  type HealthCheckClass,
  type HealthCheckRegistration,
} from './health/builder.js';
export { HealthCheckResult, type HealthStatus, type HealthCheckContext, type IHealthCheck } from './health/result.js';
export { GracefulShutdownOptions } from './health/shutdown-options.js';
export { MetricsOptions, type PrometheusRegistry } from './metrics/options.js';
export { getKitTracer, KitSpanKind, type KitTracer, type KitSpan, type KitSpanAttributes } from './tracing/tracer.js';
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
export { storeArguments, type ResolvedRateLimitOptions } from './stores/arguments.js';
export {
  kitRateLimitStore,
  type KitRateLimitStoreOptions,
  type RateLimitPluginStore,
  type RateLimitPluginStoreClass,
  type RateLimitStoreSource,
} from './stores/fastify-rate-limit.js';
export { KitStoreNames, MemoryIdempotencyStore, MemoryRateLimitStore, MemorySagaStore, MemoryCronJobStore } from './stores/memory.js';
