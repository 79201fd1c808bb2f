import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HotCounter } from './hot-counter.js';

describe('HotCounter', () => {
  it('exposes what prom-client exposes for the same increments', async () => {
    const reference = new Registry();
    const hot = new Registry();
    const expected = new Counter({ name: 'x_total', help: 'Some "help"\\.', labelNames: ['app', 'outcome'], registers: [reference] });
    const actual = new HotCounter({ name: 'x_total', help: 'Some "help"\\.', labelNames: ['app', 'outcome'], registers: [hot] });
    const increments: Array<[string, string, number]> = [
      ['shop', 'ok', 1],
      ['shop', 'ok', 2.5],
      ['shop', 'dead', 1],
      ['a"b\\c\nd', 'ok', 1],
      ['shop', 'retry', 0],
    ];
    for (const [app, outcome, value] of increments) {
      expected.labels(app, outcome).inc(value);
      actual.labels(app, outcome).inc(value);
    }
    expect(await hot.metrics()).toBe(await reference.metrics());
  });

  it('gives the same child for the same label values, and refuses what prom-client refuses', () => {
    const counter = new HotCounter({ name: 'y_total', help: 'y', labelNames: ['app'], registers: [] });
    expect(counter.labels('a')).toBe(counter.labels('a'));
    expect(() => counter.labels('a').inc(Number.NaN)).toThrow(TypeError);
    expect(() => counter.labels('a').inc(-1)).toThrow(/decrease/);
    expect(() => counter.labels('a', 'b')).toThrow(/takes 1 label values/);
    counter.labels('a').inc();
    expect(counter.get().values).toEqual([{ labels: { app: 'a' }, value: 1 }]);
  });
});
