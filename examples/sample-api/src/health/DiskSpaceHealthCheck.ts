import { statfs } from 'node:fs/promises';
import { HealthCheckResult, type IHealthCheck } from '@kit/core';
import type { HealthSettings } from './EventLoopDelayHealthCheck.js';

const GIB = 1024 ** 3;

/**
 * Free space of the file system holding `diskPath` (logs, uploads, temp files): degraded below
 * `diskDegradedBelowBytes`, unhealthy below `diskUnhealthyBelowBytes`. Space available to the
 * process (`bavail`) is what counts, not the blocks reserved for root.
 */
export class DiskSpaceHealthCheck implements IHealthCheck {
  readonly #settings: HealthSettings;

  constructor({ healthSettings }: { healthSettings: HealthSettings }) {
    this.#settings = healthSettings;
  }

  async checkHealth(): Promise<HealthCheckResult> {
    const { diskPath, diskDegradedBelowBytes, diskUnhealthyBelowBytes } = this.#settings;
    const fs = await statfs(diskPath);
    const freeBytes = fs.bavail * fs.bsize;
    const totalBytes = fs.blocks * fs.bsize;
    const data = {
      path: diskPath,
      freeBytes,
      totalBytes,
      freePercent: totalBytes > 0 ? Math.round((freeBytes / totalBytes) * 1000) / 10 : 0,
    };
    const text = `${(freeBytes / GIB).toFixed(1)} GiB free (${data.freePercent}%)`;
    if (freeBytes < diskUnhealthyBelowBytes)
      return HealthCheckResult.unhealthy(
        `${text}, below ${(diskUnhealthyBelowBytes / GIB).toFixed(1)} GiB`,
        undefined,
        data,
      );
    if (freeBytes < diskDegradedBelowBytes)
      return HealthCheckResult.degraded(
        `${text}, below ${(diskDegradedBelowBytes / GIB).toFixed(1)} GiB`,
        undefined,
        data,
      );
    return HealthCheckResult.healthy(text, data);
  }
}
