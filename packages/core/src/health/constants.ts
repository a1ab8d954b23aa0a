// Constants of the health capability that options.ts reads too: they live below both, so imports
// flow one way (options -> here, routes -> here), never back up.

/** Path of the liveness probe: fixed, not an option (docs/decisions.md, "Health, liveness and graceful shutdown"). */
export const LIVENESS_PATH = '/livez';

/**
 * Default per-check timeout. A kubelet gives up on a probe after `timeoutSeconds` (default 1 s):
 * 800 ms leaves room for the request itself, so a hung check yields a 503 report the kubelet
 * reads rather than a probe timeout it cannot tell apart from a dead process.
 */
export const DEFAULT_CHECK_TIMEOUT_MS = 800;
