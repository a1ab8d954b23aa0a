// Bytes allocated and collections run by a benchmark server, for `bench:instructions`: garbage is
// part of what a request costs, and unlike the collector's instructions (which depend on when a
// collection falls) the bytes allocated per request are the same from one run to the next.
// Active only when the server runs with KIT_BENCH_GC=1, so the throughput runs are untouched.
import v8 from 'node:v8';

export interface GcStats {
  /** Bytes allocated on the JavaScript heap since start (growth of the used heap between collections). */
  allocatedBytes: number;
  /** Bytes the scavenges moved to the old generation since start (what later costs mark-compacts). */
  promotedBytes: number;
  /** Collections since start, by V8's type name (Scavenge, MarkSweepCompact, ...). */
  collections: Record<string, number>;
}

let profiler: v8.GCProfiler | undefined;
let allocated = 0;
let promoted = 0;
let lastUsed = 0;
const collections: Record<string, number> = {};

interface HeapState {
  heapStatistics: { usedHeapSize: number };
  heapSpaceStatistics: Array<{ spaceName: string; spaceUsedSize: number }>;
}
interface GcEntry {
  gcType: string;
  beforeGC: HeapState;
  afterGC: HeapState;
}

const oldSpaceOf = (state: HeapState) =>
  state.heapSpaceStatistics.find((s) => s.spaceName === 'old_space')?.spaceUsedSize ?? 0;

export function startGcStats(): void {
  if (process.env.KIT_BENCH_GC !== '1' || profiler !== undefined) return;
  lastUsed = v8.getHeapStatistics().used_heap_size;
  profiler = new v8.GCProfiler();
  profiler.start();
}

/**
 * The statistics so far; `collect` first runs a full collection (when the server runs with
 * `--expose-gc`), so that a counted window starts from the same heap state in every scenario and
 * a mark-compact falls inside it only if the window itself promotes enough to cause one.
 */
export function gcStats(collect = false): GcStats | undefined {
  if (profiler === undefined) return undefined;
  if (collect) globalThis.gc?.();
  const data = profiler.stop() as unknown as { statistics: GcEntry[] };
  profiler.start();
  for (const gc of data.statistics) {
    allocated += gc.beforeGC.heapStatistics.usedHeapSize - lastUsed;
    lastUsed = gc.afterGC.heapStatistics.usedHeapSize;
    if (gc.gcType === 'Scavenge') promoted += oldSpaceOf(gc.afterGC) - oldSpaceOf(gc.beforeGC);
    collections[gc.gcType] = (collections[gc.gcType] ?? 0) + 1;
  }
  return {
    allocatedBytes: allocated + v8.getHeapStatistics().used_heap_size - lastUsed,
    promotedBytes: promoted,
    collections: { ...collections },
  };
}
