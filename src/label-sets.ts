/**
 * The series of a request-path metric (HotCounter, HotHistogram), one per label
 * set: made once, then found by its label values alone, with none of the
 * validation and hashing prom-client does on every observation.
 */
export class LabelSets<S> {
  private readonly series = new Map<string, S>();

  constructor(
    /** The metric's name, for the error a wrong label count gets. */
    private readonly metric: string,
    private readonly labelNames: readonly string[],
    /** Makes the series of one label set, given its labels by name. */
    private readonly make: (labels: Record<string, string>) => S,
  ) {}

  /** The series for these label values, in labelNames order; the same object every time. */
  get(values: readonly string[]): S {
    const key = values.join('\u0000');
    let series = this.series.get(key);
    if (series === undefined) {
      if (values.length !== this.labelNames.length) throw new Error(`${this.metric} takes ${this.labelNames.length} label values, got ${values.length}`);
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => (labels[name] = values[i]!));
      series = this.make(labels);
      this.series.set(key, series);
    }
    return series;
  }

  all(): IterableIterator<S> {
    return this.series.values();
  }

  clear(): void {
    this.series.clear();
  }
}
