import { describe, expect, it } from 'vitest';
import { compileOutputSchema } from '../contract/output-schema.js';
import { linearRegExp, linearRegExpEngine } from './linear-regexp.js';

describe('linear-time patterns', () => {
  it.each([
    ['^[a-z]+$', 'abc', true],
    ['^[a-z]+$', 'abc1', false],
    ['b', 'abc', true],
    ['^\\d{3}-\\d{4}$', '555-1234', true],
    ['^(?<area>\\d{3})$', '555', true],
    ['^a\\/b$', 'a/b', true],
    ['^\\p{L}+$', 'héllo', true],
  ])('%s on %s: %s', (pattern, text, expected) => {
    expect(linearRegExp(pattern, 'u').test(text)).toBe(expected);
    expect(new RegExp(pattern, 'u').test(text)).toBe(expected);
  });

  it("checks an app's output schema whose pattern backtracks exponentially in linear time", () => {
    const { validate, problem } = compileOutputSchema({ type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } }, linearRegExpEngine);
    expect(problem).toBeUndefined();
    const started = performance.now();
    expect(validate!({ s: `${'a'.repeat(28)}!` })).toBe(false);
    expect(validate!({ s: 'a'.repeat(100_000) })).toBe(true);
    // JavaScript's RegExp takes seconds on the first (2^28 backtracking steps).
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('keeps patterns apart (ajv caches them by their text) and applies them to patternProperties too', () => {
    const { validate } = compileOutputSchema({ type: 'object', patternProperties: { '^x-': { type: 'string' } }, properties: { a: { pattern: '^1$' }, b: { pattern: '^2$' } } }, linearRegExpEngine);
    expect(validate!({ a: '1', b: '2', 'x-y': 'z' })).toBe(true);
    expect(validate!({ a: '2' })).toBe(false);
    expect(validate!({ 'x-y': 1 })).toBe(false);
  });

  it('refuses a pattern no linear-time engine can run (lookaround, backreferences): the schema is a problem, not a risk', () => {
    expect(compileOutputSchema({ type: 'string', pattern: '^(?=a)a$' }, linearRegExpEngine).problem).toMatch(/\(\?=/);
    expect(compileOutputSchema({ type: 'string', pattern: '^(a)\\1$' }, linearRegExpEngine).problem).toBeDefined();
  });
});
