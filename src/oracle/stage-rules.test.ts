import { describe, expect, it } from 'vitest';
import { allowedDisagreements, judgeStage, routeTurn } from './stage-rules.js';

const OPTIMIZE = { agreement: 0.99, shadowRequests: 200, canaryRequests: 100, canaryPercent: 10, auditPercent: 1 };

describe('routeTurn', () => {
  it.each([
    ['shadow', 0.0, { primary: 'llm', compare: true }],
    ['shadow', 0.99, { primary: 'llm', compare: true }],
    ['canary', 0.05, { primary: 'code', compare: true }],
    ['canary', 0.1, { primary: 'llm', compare: false }],
    ['full', 0.005, { primary: 'code', compare: true }],
    ['full', 0.5, { primary: 'code', compare: false }],
    ['rolled-back', 0.0, { primary: 'llm', compare: false }],
    ['rejected', 0.0, { primary: 'llm', compare: false }],
    ['sampling', 0.0, { primary: 'llm', compare: false }],
  ] as const)('%s with draw %s', (stage, draw, route) => {
    expect(routeTurn(stage, OPTIMIZE, draw)).toEqual(route);
  });
});

describe('judgeStage', () => {
  it.each([
    // stage, agreements, disagreements, verdict
    ['shadow', 10, 0, undefined],
    ['shadow', 199, 0, undefined],
    ['shadow', 200, 0, { next: 'canary' }],
    ['shadow', 198, 2, { next: 'canary' }],
    ['shadow', 50, 3, 'rollback'],
    ['canary', 100, 0, { next: 'full' }],
    ['canary', 20, 2, 'rollback'],
    ['full', 1000, 2, undefined],
    ['full', 1000, 10, undefined],
    ['full', 1000, 11, 'rollback'],
    ['sampling', 0, 50, undefined],
  ] as const)('%s with %i agreements and %i disagreements', (stage, agreements, disagreements, verdict) => {
    const judged = judgeStage(stage, { agreements, disagreements }, OPTIMIZE);
    if (verdict === 'rollback') expect(judged).toMatchObject({ rollback: expect.stringMatching(new RegExp(`${disagreements} of ${agreements + disagreements} live comparisons disagreed in ${stage}`)) });
    else expect(judged).toEqual(verdict);
  });

  it('allows no disagreement at agreement 1, and counts 1% of 200 as 2', () => {
    expect(allowedDisagreements(1, 500)).toBe(0);
    expect(allowedDisagreements(0.99, 200)).toBe(2);
    expect(allowedDisagreements(0.9, 4)).toBe(0);
  });
});
