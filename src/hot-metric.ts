/**
 * What the request path's metrics (HotCounter, HotHistogram) share: one series
 * per label set, made once and then found by its label values alone, with none
 * of the validation and hashing prom-client does on every observation; and the
 * registry's public metric interface, so /metrics reads as prom-client's own.
 */
import type { Metric, Registry } from 'prom-client';

export interface HotMetricOptions<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  readonly registers: readonly Registry[];
}

export abstract class HotMetric<S> {
  readonly name: string;
  readonly help: string;
  readonly aggregator = 'sum';
  abstract readonly type: string;
  private readonly labelNames: readonly string[];
  private readonly series = new Map<string, S>();
  /** The label values asked for last and their series: a turn's metrics are asked for with the same values turn after turn. */
  private last: { values: readonly string[]; series: S } | undefined;

  constructor(options: HotMetricOptions<string>) {
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames;
    // The registry takes any object with a name and a get() that returns the values to write.
    for (const registry of options.registers) registry.registerMetric(this as unknown as Metric);
  }

  /** What the registry writes for this metric. */
  abstract get(): { name: string; help: string; type: string; values: unknown[]; aggregator: string };

  reset(): void {
    this.series.clear();
    this.last = undefined;
  }

  /** Makes the series of one label set, given its labels by name. */
  protected abstract makeSeries(labels: Record<string, string>): S;

  /** The series for these label values, in labelNames order; the same object every time. */
  protected seriesOf(values: readonly string[]): S {
    const last = this.last;
    if (last !== undefined && sameValues(last.values, values)) return last.series;
    const key = values.join('\u0000');
    let series = this.series.get(key);
    if (series === undefined) {
      if (values.length !== this.labelNames.length) throw new Error(`${this.name} takes ${this.labelNames.length} label values, got ${values.length}`);
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => (labels[name] = values[i]!));
      series = this.makeSeries(labels);
      this.series.set(key, series);
    }
    this.last = { values, series };
    return series;
  }

  protected allSeries(): IterableIterator<S> {
    return this.series.values();
  }
}

function sameValues(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
