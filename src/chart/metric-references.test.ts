import { describe, expect, it } from 'vitest';
import { createMetrics } from '../metrics.js';
import { ALERT_RULES } from './alert-rules.js';
import { VARIABLES, dashboardQueries } from './uhlp-dashboard.js';

/** Metric names a PromQL expression reads (`_bucket`, `_count`, `_sum` belong to their histogram). */
export function referencedMetrics(expr: string): string[] {
  return [...new Set([...expr.matchAll(/\buhlp_[a-z0-9_]+/g)].map((match) => match[0].replace(/_(bucket|count|sum)$/, '')))];
}

// A dashboard row or alert whose metric does not exist (yet) fails here: rows for the
// optimizer and the queues come with the metrics that feed them.
describe('metrics the dashboard and the alerts read', () => {
  // Every metric any process exports: the core's, the operator's, and the AppDefinition watch's.
  const registered = new Set(createMetrics({ operator: true, appWatch: true }).registry.getMetricsAsArray().map((metric) => metric.name));
  const histogramsOnly = (name: string): boolean => registered.has(name);

  const uses: Array<{ where: string; expr: string }> = [
    ...dashboardQueries().map((query) => ({ where: `dashboard ${query.row} / ${query.panel}`, expr: query.expr })),
    ...VARIABLES.map((variable) => ({ where: `dashboard variable ${variable.name}`, expr: variable.series })),
    ...ALERT_RULES.map((rule) => ({ where: `alert ${rule.alert}`, expr: rule.expr })),
  ];

  it.each(uses)('$where reads only metrics of the registry', ({ expr }) => {
    const names = referencedMetrics(expr);
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((name) => !histogramsOnly(name))).toEqual([]);
  });

  it('finds a missing metric', () => {
    expect(referencedMetrics('rate(uhlp_queue_depth_nope[5m])').filter((name) => !registered.has(name))).toEqual(['uhlp_queue_depth_nope']);
  });

  it('prefixes every exported metric with uhlp_ exactly once', () => {
    for (const name of registered) expect(name).toMatch(/^uhlp_(?!uhlp_)/);
  });
});
