import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HotHistogram } from './hot-histogram.js';

describe('HotHistogram', () => {
  it('exposes what prom-client exposes for the same observations', async () => {
    const buckets = [0.001, 0.01, 0.1, 1];
    const reference = new Registry();
    const hot = new Registry();
    const expected = new Histogram({ name: 'x_seconds', help: 'Some "help"\\.', labelNames: ['app', 'outcome'], buckets, registers: [reference] });
    const actual = new HotHistogram({ name: 'x_seconds', help: 'Some "help"\\.', labelNames: ['app', 'outcome'], buckets, registers: [hot] });
    const observations: Array<[string, string, number]> = [
      ['shop', 'ok', 0.0004],
      ['shop', 'ok', 0.001],
      ['shop', 'ok', 0.05],
      ['shop', 'error', 3],
      ['a"b\\c\nd', 'ok', 0.2],
      ['shop', 'ok', 0],
    ];
    for (const [app, outcome, value] of observations) {
      expected.labels(app, outcome).observe(value);
      actual.labels(app, outcome).observe(value);
    }
    expect(await hot.metrics()).toBe(await reference.metrics());
  });

  it('gives the same child for the same label values, and refuses a value that is not a number', () => {
    const histogram = new HotHistogram({ name: 'y_seconds', help: 'y', labelNames: ['app'], buckets: [1], registers: [] });
    expect(histogram.labels('a')).toBe(histogram.labels('a'));
    expect(() => histogram.labels('a').observe(Number.NaN)).toThrow(TypeError);
    expect(() => histogram.labels('a', 'b')).toThrow(/takes 1 label values/);
  });

  it('finds each label set its own child when the values change from one call to the next, and a new one after reset', async () => {
    const registry = new Registry();
    const histogram = new HotHistogram({ name: 'z_seconds', help: 'z', labelNames: ['app', 'outcome'], buckets: [1], registers: [registry] });
    const ok = histogram.labels('shop', 'ok');
    // Equal values in other strings than the first call's: the same child.
    expect(histogram.labels('sh' + 'op', ['o', 'k'].join(''))).toBe(ok);
    const error = histogram.labels('shop', 'error');
    expect(error).not.toBe(ok);
    expect(histogram.labels('shop', 'ok')).toBe(ok);
    histogram.labels('shop', 'ok').observe(0.5);
    histogram.labels('shop', 'error').observe(2);
    histogram.labels('shop', 'ok').observe(0.5);
    const text = await registry.metrics();
    expect(text).toContain('z_seconds_count{app="shop",outcome="ok"} 2');
    expect(text).toContain('z_seconds_count{app="shop",outcome="error"} 1');
    histogram.reset();
    const fresh = histogram.labels('shop', 'ok');
    expect(fresh).not.toBe(ok);
    fresh.observe(0.5);
    expect(await registry.metrics()).toContain('z_seconds_count{app="shop",outcome="ok"} 1');
  });
});
