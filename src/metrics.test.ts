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
