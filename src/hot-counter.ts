/**
 * A counter for the request path. prom-client's Counter validates and hashes
 * its labels on every increment (sorting their names); this one resolves a
 * label set once, to a child that only adds (hot-metric.ts). It exposes exactly
 * what prom-client's Counter does, so /metrics reads the same.
 */
import { HotMetric, type HotMetricOptions } from './hot-metric.js';

export type HotCounterOptions<L extends string> = HotMetricOptions<L>;

export interface HotCounterChild {
  /** Adds `value` (1 by default); a counter never goes down. */
  inc(value?: number): void;
}

interface Series extends HotCounterChild {
  readonly labels: Record<string, string>;
  value: number;
}

export class HotCounter<L extends string = string> extends HotMetric<Series> {
  readonly type = 'counter';

  // Typed with the caller's label names (the base keeps them as strings).
  constructor(options: HotCounterOptions<L>) {
    super(options);
  }

  /** The child for these label values, in labelNames order; the same object every time. */
  labels(...values: string[]): HotCounterChild {
    return this.seriesOf(values);
  }

  /** What the registry writes: prom-client's counter values. */
  get(): { name: string; help: string; type: string; values: Array<{ labels: Record<string, string>; value: number }>; aggregator: string } {
    const values = [...this.allSeries()].map((series) => ({ labels: { ...series.labels }, value: series.value }));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  protected makeSeries(labels: Record<string, string>): Series {
    const created: Series = {
      labels,
      value: 0,
      inc(value = 1): void {
        if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
        if (value < 0) throw new Error('It is not possible to decrease a counter');
        created.value += value;
      },
    };
    return created;
  }
}
