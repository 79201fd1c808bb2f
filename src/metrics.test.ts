import { describe, expect, it } from 'vitest';
import { createMetrics, METRIC_PREFIX } from './metrics.js';

describe('metric names', () => {
  it('start with the prefix once, the process and Node.js metrics included', async () => {
    const { registry } = createMetrics();
    const names = (await registry.getMetricsAsJSON()).map((metric) => metric.name);
    expect(names).toContain('uhlp_process_cpu_seconds_total');
    expect(names).toContain('uhlp_nodejs_heap_size_used_bytes');
    for (const name of names) {
      expect(name.startsWith(METRIC_PREFIX), name).toBe(true);
      expect(name, 'a word repeated after the prefix').not.toMatch(/^uhlp_(\w+?)_\1_/);
      expect(name.slice(METRIC_PREFIX.length).startsWith(METRIC_PREFIX), name).toBe(false);
    }
  });
});

describe('what each process exports', () => {
  const names = async (options: Parameters<typeof createMetrics>[0]): Promise<string[]> =>
    (await createMetrics(options).registry.getMetricsAsJSON()).map((metric) => metric.name);

  it('a core exports no operator metric (no `uhlp_operator_leader 0`); an operator does', async () => {
    expect((await names({})).filter((name) => name.startsWith('uhlp_operator_'))).toEqual([]);
    expect(await names({ operator: true })).toEqual(expect.arrayContaining(['uhlp_operator_leader', 'uhlp_operator_reconciles_total', 'uhlp_operator_queue_depth']));
  });

  it('exports uhlp_app_watch_up only for a core that watches AppDefinitions, from its probe', async () => {
    expect(await names({})).not.toContain('uhlp_app_watch_up');
    const metrics = createMetrics({ appWatch: true, defaultMetrics: false });
    let live = true;
    metrics.appWatchProbes.add(() => live);
    expect(await metrics.registry.metrics()).toMatch(/^uhlp_app_watch_up 1$/m);
    live = false;
    expect(await metrics.registry.metrics()).toMatch(/^uhlp_app_watch_up 0$/m);
  });

  it('names no gauge with the `_total` of counters (promtool check metrics refuses it)', async () => {
    const gauges = (await createMetrics({ operator: true, appWatch: true }).registry.getMetricsAsJSON()).filter((metric) => String(metric.type) === 'gauge');
    expect(gauges.map((metric) => metric.name).filter((name) => name.endsWith('_total'))).toEqual([]);
  });
});
