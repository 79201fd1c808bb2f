import { describe, expect, it } from 'vitest';
import { wildcardMatch } from './wildcard-match.js';

describe('wildcardMatch', () => {
  it.each([
    ['orders.created', 'orders.*', {}, true],
    ['orders', 'orders.*', {}, false],
    ['', '*', {}, true],
    ['', '', {}, true],
    ['a', '', {}, false],
    ['abcbc', 'a*bc', {}, true],
    ['abcbd', 'a*bc', {}, false],
    ['abc', 'a**c', {}, true],
    ['abc', 'a?c', {}, false],
    ['abc', 'a?c', { questionMark: true }, true],
    ['a?c', 'a?c', {}, true],
    ['APP.FS.X', 'app.fs.*', {}, false],
    ['APP.FS.X', 'app.fs.*', { ignoreCase: true }, true],
  ])('%s against %s (%o): %s', (text, pattern, options, expected) => {
    expect(wildcardMatch(text, pattern, options)).toBe(expected);
  });

  it('costs at most text x pattern steps', () => {
    const started = performance.now();
    expect(wildcardMatch('a'.repeat(20_000), '*a*a*a*a*a*a*a*a*b')).toBe(false);
    expect(performance.now() - started).toBeLessThan(500);
  });
});
