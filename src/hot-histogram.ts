/**
 * A histogram for the request path. prom-client's Histogram hashes its labels
 * and validates them on every observation (about half a microsecond each, and
 * a request makes several); this one resolves a label set once, to a child that
 * only finds a bucket and adds (hot-metric.ts). It exposes exactly what
 * prom-client's Histogram does (cumulative `_bucket` lines with `le`, then
 * `_sum` and `_count`), so /metrics reads the same.
 */
import { HotMetric, type HotMetricOptions } from './hot-metric.js';

export interface HotHistogramOptions<L extends string> extends HotMetricOptions<L> {
  /** Upper bounds, ascending; `+Inf` is added. */
  readonly buckets: readonly number[];
}

export interface HotHistogramChild {
  observe(value: number): void;
  /**
   * Observes, and keeps `exemplar` (a trace's ids) as the latest exemplar of the
   * value's bucket: the OpenMetrics exposition shows it, so that a slow bucket
   * leads to a trace behind it.
   */
  observeWithExemplar(value: number, exemplar: Readonly<Record<string, string>>): void;
}

/** An OpenMetrics exemplar as prom-client's registry writes it. */
interface Exemplar {
  readonly labelSet: Readonly<Record<string, string>>;
  readonly value: number;
  /** Seconds since the epoch. */
  readonly timestamp: number;
}

/** One line of the exposition, as prom-client's registry reads it. */
interface ValueLine {
  readonly labels: Record<string, string | number>;
  readonly value: number;
  readonly metricName: string;
  readonly exemplar?: Exemplar;
}

interface Series extends HotHistogramChild {
  readonly labels: Record<string, string>;
  /** Observations per bucket (not cumulative); the last one is `+Inf`. */
  readonly counts: number[];
  /** The latest exemplar per bucket; made at the first exemplar (never, without tracing). */
  exemplars: Array<Exemplar | undefined> | undefined;
  sum: number;
  count: number;
}

export class HotHistogram<L extends string = string> extends HotMetric<Series> {
  readonly type = 'histogram';
  private readonly bounds: readonly number[];

  constructor(options: HotHistogramOptions<L>) {
    super(options);
    this.bounds = options.buckets;
  }

  /** The child for these label values, in labelNames order; the same object every time. */
  labels(...values: string[]): HotHistogramChild {
    return this.seriesOf(values);
  }

  /** What the registry writes: prom-client's histogram values, bucket counts cumulative. */
  get(): { name: string; help: string; type: string; values: ValueLine[]; aggregator: string } {
    const values: ValueLine[] = [];
    for (const series of this.allSeries()) {
      let cumulative = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += series.counts[i]!;
        const exemplar = series.exemplars?.[i];
        values.push({
          labels: { le: i < this.bounds.length ? this.bounds[i]! : '+Inf', ...series.labels },
          value: cumulative,
          metricName: `${this.name}_bucket`,
          ...(exemplar !== undefined ? { exemplar } : {}),
        });
      }
      values.push({ labels: { ...series.labels }, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...series.labels }, value: series.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  protected makeSeries(labels: Record<string, string>): Series {
    const bounds = this.bounds;
    const created: Series = {
      labels,
      counts: new Array<number>(bounds.length + 1).fill(0),
      exemplars: undefined,
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
      observeWithExemplar(value: number, labelSet: Readonly<Record<string, string>>): void {
        created.observe(value);
        let i = 0;
        while (i < bounds.length && value > bounds[i]!) i++;
        created.exemplars ??= new Array<Exemplar | undefined>(bounds.length + 1).fill(undefined);
        created.exemplars[i] = { labelSet, value, timestamp: Date.now() / 1000 };
      },
    };
    return created;
  }
}
