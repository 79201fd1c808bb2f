import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical-json.js';

describe('canonicalJson', () => {
  it.each([
    [{ b: 1, a: [3, { d: null, c: 'x' }] }, '{"a":[3,{"c":"x","d":null}],"b":1}'],
    [{ z: undefined, y: 'é\n' }, '{"y":"é\\n"}'],
    [[undefined, 1.5, true], '[null,1.5,true]'],
    ['plain', '"plain"'],
  ])('writes %j as %s', (value, expected) => {
    expect(canonicalJson(value)).toBe(expected);
  });

  it('does not depend on key insertion order', () => {
    expect(canonicalJson({ a: 1, b: { c: 2, d: 3 } })).toBe(canonicalJson({ b: { d: 3, c: 2 }, a: 1 }));
  });

  it('refuses values JSON cannot carry exactly', () => {
    expect(() => canonicalJson({ n: NaN })).toThrow(/\$\.n/);
    expect(() => canonicalJson({ f: () => 1 })).toThrow(/function/);
  });
});
