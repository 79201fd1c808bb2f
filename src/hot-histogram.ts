/**
 * A histogram for the request path. prom-client's Histogram hashes its labels
 * and validates them on every observation (about half a microsecond each, and
 * a request makes several); this one resolves a label set once, to a child that
 * only finds a bucket and adds. It exposes exactly what prom-client's Histogram
 * does (cumulative `_bucket` lines with `le`, then `_sum` and `_count`), through
 * the registry's public metric interface, so /metrics reads the same.
 */
import type { Metric, Registry } from 'prom-client';
import { LabelSets } from './label-sets.js';

export interface HotHistogramOptions<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  /** Upper bounds, ascending; `+Inf` is added. */
  readonly buckets: readonly number[];
  readonly registers: readonly Registry[];
}

export interface HotHistogramChild {
  observe(value: number): void;
}

/** One line of the exposition, as prom-client's registry reads it. */
interface ValueLine {
  readonly labels: Record<string, string | number>;
  readonly value: number;
  readonly metricName: string;
}

interface Series extends HotHistogramChild {
  readonly labels: Record<string, string>;
  /** Observations per bucket (not cumulative); the last one is `+Inf`. */
  readonly counts: number[];
  sum: number;
  count: number;
}

export class HotHistogram<L extends string = string> {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly bounds: readonly number[];
  private readonly series: LabelSets<Series>;

  constructor(options: HotHistogramOptions<L>) {
    this.name = options.name;
    this.help = options.help;
    const bounds = (this.bounds = options.buckets);
    this.series = new LabelSets(options.name, options.labelNames, (labels) => {
      const created: Series = {
        labels,
        counts: new Array<number>(bounds.length + 1).fill(0),
        sum: 0,
        count: 0,
        observe(value: number): void {
          if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
          let i = 0;
          while (i < bounds.length && value > bounds[i]!) i++;
          created.counts[i]! += 1;
          created.sum += value;
          created.count += 1;
        },
      };
      return created;
    });
    // The registry takes any object with a name and a get() that returns the values to write.
    for (const registry of options.registers) registry.registerMetric(this as unknown as Metric);
  }

  /** The child for these label values, in labelNames order; the same object every time. */
  labels(...values: string[]): HotHistogramChild {
    return this.series.get(values);
  }

  /** What the registry writes: prom-client's histogram values, bucket counts cumulative. */
  get(): { name: string; help: string; type: string; values: ValueLine[]; aggregator: string } {
    const values: ValueLine[] = [];
    for (const series of this.series.all()) {
      let cumulative = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += series.counts[i]!;
        values.push({ labels: { le: i < this.bounds.length ? this.bounds[i]! : '+Inf', ...series.labels }, value: cumulative, metricName: `${this.name}_bucket` });
      }
      values.push({ labels: { ...series.labels }, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...series.labels }, value: series.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.series.clear();
  }
}
