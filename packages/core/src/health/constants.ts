// Constants of the health capability that options.ts reads too: they live below both, so imports
// flow one way (options -> here, routes -> here), never back up.

/** Path of the liveness probe (spec: fixed). */
export const LIVENESS_PATH = '/livez';
