import { describe, expect, it } from 'vitest';
import { sameStatus, setCondition } from './conditions.js';

const t0 = new Date('2026-01-01T00:00:00.123Z');
const t1 = new Date('2026-01-01T00:05:00.000Z');

describe('setCondition', () => {
  it('appends a new condition stamped with now (seconds precision)', () => {
    const conditions = setCondition(undefined, { type: 'Ready', status: 'True', reason: 'Reconciled', message: '' }, t0);
    expect(conditions).toEqual([{ type: 'Ready', status: 'True', reason: 'Reconciled', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }]);
  });

  it('keeps lastTransitionTime while the status stays, and moves it when the status flips', () => {
    const first = setCondition(undefined, { type: 'Ready', status: 'True', reason: 'A', message: '' }, t0);
    const same = setCondition(first, { type: 'Ready', status: 'True', reason: 'B', message: 'm' }, t1);
    expect(same[0]).toMatchObject({ reason: 'B', message: 'm', lastTransitionTime: '2026-01-01T00:00:00Z' });
    const flipped = setCondition(same, { type: 'Ready', status: 'False', reason: 'C', message: '' }, t1);
    expect(flipped[0]).toMatchObject({ status: 'False', lastTransitionTime: '2026-01-01T00:05:00Z' });
  });

  it('leaves other condition types alone', () => {
    const both = setCondition(setCondition(undefined, { type: 'Degraded', status: 'False', reason: 'A', message: '' }, t0), { type: 'Ready', status: 'True', reason: 'A', message: '' }, t1);
    expect(both.map((condition) => condition.type)).toEqual(['Degraded', 'Ready']);
  });
});

describe('sameStatus', () => {
  it('ignores undefined members and sees real differences', () => {
    expect(sameStatus({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(sameStatus({ a: 1 }, { a: 2 })).toBe(false);
    expect(sameStatus(undefined, {})).toBe(false);
  });
});
