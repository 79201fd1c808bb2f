import { describe, expect, it } from 'vitest';
import { applyMergePatch } from './json-merge-patch.js';

describe('applyMergePatch (RFC 7396)', () => {
  it('merges objects key by key, removes keys set to null, replaces the rest whole', () => {
    const target = { a: 'b', c: { d: 'e', f: 'g' }, list: [1, 2] };
    expect(applyMergePatch(target, { a: 'z', c: { f: null, h: 1 }, list: [3] })).toEqual({ a: 'z', c: { d: 'e', h: 1 }, list: [3] });
    expect(target).toEqual({ a: 'b', c: { d: 'e', f: 'g' }, list: [1, 2] });
  });

  it("follows the RFC's examples", () => {
    expect(applyMergePatch({ a: 'b' }, { a: 'c' })).toEqual({ a: 'c' });
    expect(applyMergePatch({ a: 'b' }, { b: 'c' })).toEqual({ a: 'b', b: 'c' });
    expect(applyMergePatch({ a: 'b' }, { a: null })).toEqual({});
    expect(applyMergePatch({ a: [{ b: 'c' }] }, { a: [1] })).toEqual({ a: [1] });
    expect(applyMergePatch(['a', 'b'], ['c', 'd'])).toEqual(['c', 'd']);
    expect(applyMergePatch({ a: 'b' }, ['c'])).toEqual(['c']);
    expect(applyMergePatch({ e: null }, { a: 1 })).toEqual({ e: null, a: 1 });
    expect(applyMergePatch([1, 2], { a: 'b', c: null })).toEqual({ a: 'b' });
    expect(applyMergePatch({}, { a: { bb: { ccc: null } } })).toEqual({ a: { bb: {} } });
  });

  it('keeps a __proto__ key of a patch as a key, never as the prototype', () => {
    const patched = applyMergePatch({}, JSON.parse('{"__proto__": {"polluted": true}}')) as Record<string, unknown>;
    expect(Object.getPrototypeOf(patched)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(Object.hasOwn(patched, '__proto__')).toBe(true);
    expect(JSON.stringify(patched)).toBe('{"__proto__":{"polluted":true}}');
  });
});
