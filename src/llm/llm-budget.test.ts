import { describe, expect, it } from 'vitest';
import { MemoryRuntimeStore } from '../state/memory-runtime-store.js';
import { chargeLlmBudget, checkLlmBudget, msUntilUtcDayEnds, utcDay } from './llm-budget.js';

describe('LLM budget days', () => {
  it.each([
    ['2026-05-04T00:00:00.000Z', '2026-05-04', 86_400_000],
    ['2026-05-04T23:59:59.999Z', '2026-05-04', 1],
    ['2026-05-04T12:00:00.000Z', '2026-05-04', 43_200_000],
    ['2028-02-29T23:00:00.000Z', '2028-02-29', 3_600_000],
  ])('%s is in day %s, which ends in %d ms', (instant, day, left) => {
    const now = Date.parse(instant);
    expect(utcDay(now)).toBe(day);
    expect(msUntilUtcDayEnds(now)).toBe(left);
  });

  it('names the day of each instant whatever was asked before: back and forth across midnight, before 1970, and the same instant twice', () => {
    const instants = ['2026-05-04T23:59:59.999Z', '2026-05-05T00:00:00.000Z', '2026-05-04T23:59:59.999Z', '1969-12-31T23:59:59.999Z', '1970-01-01T00:00:00.000Z', '2026-05-05T00:00:00.000Z'];
    for (const instant of instants) {
      expect(utcDay(Date.parse(instant))).toBe(instant.slice(0, 10));
      expect(utcDay(Date.parse(instant))).toBe(instant.slice(0, 10));
    }
    expect(() => utcDay(Number.NaN)).toThrow(RangeError);
  });

  it('keeps a count until an hour after its day ends, and rounds Retry-After seconds up', async () => {
    let now = Date.parse('2026-05-04T23:59:59.200Z');
    const store = new MemoryRuntimeStore({ now: () => now });
    await chargeLlmBudget(store.llm, 'shop', '2026-05-04', 10, now);
    await expect(checkLlmBudget(store.llm, 'shop', 10, now)).rejects.toMatchObject({ code: 'UHLP_LLM_BUDGET_EXCEEDED', details: { retryAfterSeconds: 1 } });
    now = Date.parse('2026-05-05T00:59:59.000Z');
    expect(await store.llm.getLlmTokens('shop', '2026-05-04')).toBe(10);
    now = Date.parse('2026-05-05T01:00:00.200Z');
    expect(await store.llm.getLlmTokens('shop', '2026-05-04')).toBe(0);
    await store.close();
  });
});
