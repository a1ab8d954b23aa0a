/**
 * A Prometheus histogram whose per-request cost is a few array writes: prom-client renders it
 * (it is registered in a prom-client `Registry` like any metric: name, help, type, `get()`), but
 * observing does not go through prom-client's `Histogram`, whose `observe` validates and hashes
 * the label set on every call, labelled child included (about 3.5 µs a call on the bench machine,
 * docs/benchmarks.md). Each label set gets a cell once; the request path keeps the cell.
 */
export class FastHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #cells = new Map<string, HistogramCell>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly L[],
    private readonly buckets: readonly number[],
  ) {}

  /** The cell of one label set (values in `labelNames` order), created on first use. */
  cell(values: readonly string[]): HistogramCell {
    const key = values.join('\u0000');
    let cell = this.#cells.get(key);
    if (cell === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((n, i) => (labels[n] = values[i] ?? ''));
      cell = new HistogramCell(this.buckets, labels);
      this.#cells.set(key, cell);
    }
    return cell;
  }

  /** What prom-client's registry renders: cumulative buckets, `_sum` and `_count` per label set. */
  get(): {
    name: string;
    help: string;
    type: 'histogram';
    aggregator: 'sum';
    values: Array<{ labels: Record<string, string | number>; value: number; metricName: string }>;
  } {
    const values: Array<{
      labels: Record<string, string | number>;
      value: number;
      metricName: string;
    }> = [];
    for (const cell of this.#cells.values()) {
      let cumulative = 0;
      this.buckets.forEach((le, i) => {
        cumulative += cell.counts[i] as number;
        values.push({
          labels: { le, ...cell.labels },
          value: cumulative,
          metricName: `${this.name}_bucket`,
        });
      });
      values.push({
        labels: { le: '+Inf', ...cell.labels },
        value: cell.count,
        metricName: `${this.name}_bucket`,
      });
      values.push({ labels: cell.labels, value: cell.sum, metricName: `${this.name}_sum` });
      values.push({ labels: cell.labels, value: cell.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: 'histogram', aggregator: 'sum', values };
  }

  /** prom-client's `registry.resetMetrics()` calls it. */
  reset(): void {
    this.#cells.clear();
  }
}

/** One label set's counters. */
export class HistogramCell {
  /** Observations per bucket, not cumulative; values above the last bound are only in `count`. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    private readonly bounds: readonly number[],
    readonly labels: Readonly<Record<string, string>>,
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= (bounds[i] as number)) {
        this.counts[i] = (this.counts[i] as number) + 1;
        break;
      }
    }
    this.sum += value;
    this.count += 1;
  }
}
