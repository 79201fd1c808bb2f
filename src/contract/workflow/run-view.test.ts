import { describe, expect, it } from 'vitest';
import { bounded, boundedCopy, MAX_STEP_VALUE_BYTES } from './run-view.js';

describe('a step value as the run keeps it', () => {
  it.each<[string, unknown, unknown]>([
    ['undefined', undefined, null],
    ['a value JSON cannot carry', () => 1, null],
    ['a small value', { a: [1, 'two', null] }, { a: [1, 'two', null] }],
  ])('bounded and boundedCopy agree on %s', (_name, value, kept) => {
    expect(bounded(value)).toEqual(kept);
    expect(boundedCopy(value)).toEqual(kept);
  });

  it('copies a value within the bound, so later changes of it do not reach the copy', () => {
    const board: Record<string, unknown> = { n: 1, nested: { list: [1] } };
    const copy = boundedCopy(board) as typeof board;
    board['n'] = 2;
    (board['nested'] as { list: number[] }).list.push(2);
    expect(copy).toEqual({ n: 1, nested: { list: [1] } });
  });

  it('stands a note of its size for a value over the bound, as bounded does', () => {
    const big = { text: 'x'.repeat(MAX_STEP_VALUE_BYTES) };
    const note = boundedCopy(big);
    expect(note).toEqual(bounded(big));
    expect(note).toMatchObject({ truncated: true, bytes: MAX_STEP_VALUE_BYTES + 11 });
  });
});
