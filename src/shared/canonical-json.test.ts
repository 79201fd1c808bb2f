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

describe('canonicalJson strings and numbers', () => {
  it('writes every string and number exactly as JSON.stringify does', () => {
    const samples = ['', 'plain', 'q"uote', 'back\\slash', 'tab\there', '\u0000\u001f\u007f', 'é ü 漢字', '😀', '\ud800', 'x\udc00y', '</script>'];
    for (const text of samples) {
      expect(canonicalJson(text)).toBe(JSON.stringify(text));
      expect(canonicalJson({ [text]: text })).toBe(`{${JSON.stringify(text)}:${JSON.stringify(text)}}`);
    }
    for (const n of [0, -0, 1.5, -2e-7, 1e21, 123456789012345680000, Number.MAX_SAFE_INTEGER, 5e-324]) expect(canonicalJson(n)).toBe(JSON.stringify(n));
  });
});
