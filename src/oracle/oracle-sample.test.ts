import { describe, expect, it } from 'vitest';
import { MAX_INPUT_PATHS } from '../contract/template-inputs.js';
import { makeSample, MAX_SAMPLE_INPUT_CHARS, projectInputs, readInputPaths, sameOutput } from './oracle-sample.js';
import { isHeldBack, splitSamples } from './sample-split.js';

describe('readInputPaths', () => {
  it('takes bounded paths of known variables and leaves out other names', () => {
    expect(readInputPaths([['body', 'text'], ['range'], ['params', 'id']])).toEqual([['body', 'text'], ['params', 'id']]);
  });

  it.each([
    ['not a list', { body: 1 }],
    ['a path that is not a list', ['body']],
    ['an empty path', [[]]],
    ['a path too deep', [['body', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']]],
    ['a segment that is not a string', [['body', 1]]],
    ['a segment too long', [['body', 'x'.repeat(129)]]],
    ['too many paths', Array.from({ length: MAX_INPUT_PATHS + 1 }, () => ['body'])],
  ])('refuses %s', (_what, raw) => {
    expect(readInputPaths(raw)).toMatchObject({ problem: expect.any(String) });
  });
});

describe('projectInputs', () => {
  it('keeps the values at the paths in a tree of the same shape, and leaves absent ones out', () => {
    const variables = { body: { text: 'hi', meta: { urgent: true, n: 1 } }, params: {}, headers: { 'x.y': 'dot' } };
    expect(projectInputs(variables, [['body', 'text'], ['body', 'meta', 'urgent'], ['params', 'missing'], ['headers', 'x.y'], ['body', 'text', 'length']])).toEqual({
      body: { text: 'hi', meta: { urgent: true } },
      headers: { 'x.y': 'dot' },
    });
    // Own keys only: nothing is read from a prototype.
    expect(projectInputs(variables, [['body', 'constructor']])).toEqual({});
  });
});

describe('samples', () => {
  it('hash canonical JSON: key order does not matter, and the same inputs have the same hash', () => {
    const a = makeSample({ body: { a: 1, b: 2 } }, { label: 'x', score: 1 }, 10, new Date(0));
    const b = makeSample({ body: { b: 2, a: 1 } }, { score: 1, label: 'x' }, 0, new Date(1));
    expect('problem' in a || 'problem' in b).toBe(false);
    if ('problem' in a || 'problem' in b) return;
    expect(a.inputHash).toBe(b.inputHash);
    expect(a.outputHash).toBe(b.outputHash);
    expect(sameOutput({ a: [1, { b: 2, c: 3 }] }, { a: [1, { c: 3, b: 2 }] })).toBe(true);
    expect(sameOutput({ a: 1 }, { a: '1' })).toBe(false);
  });

  it('refuses inputs over the limit', () => {
    expect(makeSample({ body: 'x'.repeat(MAX_SAMPLE_INPUT_CHARS) }, {}, 1, new Date())).toEqual({ problem: 'too-large' });
  });

  it('split by input hash: a repeat lands on the same side, and shown samples move to training', () => {
    const samples = Array.from({ length: 200 }, (_, i) => {
      const made = makeSample({ body: { n: i } }, { n: i }, 1, new Date(0));
      if ('problem' in made) throw new Error('too large');
      return made;
    });
    const split = splitSamples(samples, 0.3);
    expect(split.heldBack.length).toBeGreaterThan(35);
    expect(split.heldBack.length).toBeLessThan(85);
    expect(split.heldBack.every((s) => isHeldBack(s, 0.3))).toBe(true);
    const shown = new Set([split.heldBack[0]!.inputHash]);
    const after = splitSamples(samples, 0.3, shown);
    expect(after.heldBack).toHaveLength(split.heldBack.length - 1);
    expect(after.training).toContain(split.heldBack[0]);
  });
});
