/**
 * A counter for the request path. prom-client's Counter validates and hashes
 * its labels on every increment (sorting their names); this one resolves a
 * label set once, to a child that only adds, as HotHistogram does for
 * histograms. It exposes exactly what prom-client's Counter does, through the
 * registry's public metric interface, so /metrics reads the same.
 */
import type { Metric, Registry } from 'prom-client';
import { LabelSets } from './label-sets.js';

export interface HotCounterOptions<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  readonly registers: readonly Registry[];
}

export interface HotCounterChild {
  /** Adds `value` (1 by default); a counter never goes down. */
  inc(value?: number): void;
}

interface Series extends HotCounterChild {
  readonly labels: Record<string, string>;
  value: number;
}

export class HotCounter<L extends string = string> {
  readonly name: string;
  readonly help: string;
  readonly type = 'counter';
  readonly aggregator = 'sum';
  private readonly series: LabelSets<Series>;

  constructor(options: HotCounterOptions<L>) {
    this.name = options.name;
    this.help = options.help;
    this.series = new LabelSets(options.name, options.labelNames, (labels) => {
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
    });
    // The registry takes any object with a name and a get() that returns the values to write.
    for (const registry of options.registers) registry.registerMetric(this as unknown as Metric);
  }

  /** The child for these label values, in labelNames order; the same object every time. */
  labels(...values: string[]): HotCounterChild {
    return this.series.get(values);
  }

  /** What the registry writes: prom-client's counter values. */
  get(): { name: string; help: string; type: string; values: Array<{ labels: Record<string, string>; value: number }>; aggregator: string } {
    const values = [...this.series.all()].map((series) => ({ labels: { ...series.labels }, value: series.value }));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.series.clear();
  }
}
