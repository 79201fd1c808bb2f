import { describe, expect, it } from 'vitest';
import { createMetrics } from './metrics.js';
import { exposition, prefersOpenMetrics } from './metrics-exposition.js';

describe('the /metrics exposition', () => {
  it('serves OpenMetrics with the exemplars of traced turns to a scraper that asks, and leaves the Prometheus text as it was', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.turnSeconds.labels('app', 'c', 'ok').observeWithExemplar(0.3, { trace_id: 'a'.repeat(32), span_id: 'b'.repeat(16) });
    metrics.turnSeconds.labels('app', 'c', 'ok').observe(0.001);
    metrics.mcpCalls.inc({ app: 'app', tool: 't', outcome: 'ok' });
    const before = await exposition(metrics.registry, false);

    const open = await exposition(metrics.registry, true);
    expect(open.contentType).toMatch(/^application\/openmetrics-text; version=1\.0\.0/);
    expect(open.body.endsWith('# EOF\n')).toBe(true);
    const slowBucket = open.body.split('\n').find((line) => line.startsWith('uhlp_turn_duration_seconds_bucket{le="0.5"'));
    expect(slowBucket).toMatch(new RegExp(`# \\{trace_id="${'a'.repeat(32)}",span_id="${'b'.repeat(16)}"\\} 0\\.3 \\d+(\\.\\d+)?$`));
    // The fast bucket of the untraced observation has none.
    expect(open.body.split('\n').find((line) => line.startsWith('uhlp_turn_duration_seconds_bucket{le="0.005"'))).not.toContain('#');
    expect(open.body).toMatch(/^uhlp_mcp_calls_total\{/m);
    expect(open.body).not.toMatch(/_total_total/);

    const after = await exposition(metrics.registry, false);
    expect(after.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(after.body).toBe(before.body);
    expect(after.body).not.toContain('trace_id');
  });

  it.each([
    ['application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5', true],
    ['text/plain', false],
    [undefined, false],
  ])('reads Accept %s', (accept, expected) => expect(prefersOpenMetrics(accept)).toBe(expected));
});
