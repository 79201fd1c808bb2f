/**
 * The daily token budget of an app (`capabilities.llm.tokensPerDay`): tokens,
 * prompt and completion, an app spends per UTC day, counted in the runtime
 * store so every core replica shares one count. A call is checked before it
 * is made and charged after it with what the provider reports; calls running
 * at once are all admitted while the count is under the budget, so the day
 * can end a few calls over it, never more.
 */
import { UhlpError } from '../shared/errors.js';
import type { LlmStore } from '../state/llm-store.js';

export type LlmBudgetStore = Pick<LlmStore, 'getLlmTokens' | 'addLlmTokens'>;

const DAY_MS = 86_400_000;
/**
 * A day's count is kept this long past the day's end: a core whose clock is a
 * little behind still finds the count of the day it thinks it is.
 */
const COUNT_GRACE_MS = 3_600_000;

/** The last day asked for: every LLM call asks for its day twice, and a Date formatted each time showed in profiles. */
let lastDay = { start: 0, end: 0, day: '' };

/** The UTC day of an instant, as `YYYY-MM-DD`. */
export function utcDay(now: number): string {
  if (now >= lastDay.start && now < lastDay.end) return lastDay.day;
  const start = now - (((now % DAY_MS) + DAY_MS) % DAY_MS);
  const day = new Date(start).toISOString().slice(0, 10);
  lastDay = { start, end: start + DAY_MS, day };
  return day;
}

/** When the UTC day `day` (`YYYY-MM-DD`) starts, epoch milliseconds. */
function dayStart(day: string): number {
  return day === lastDay.day ? lastDay.start : Date.parse(`${day}T00:00:00.000Z`);
}

/** Milliseconds from `now` to the next UTC midnight (at least 1). */
export function msUntilUtcDayEnds(now: number): number {
  return Math.max(1, DAY_MS - (((now % DAY_MS) + DAY_MS) % DAY_MS));
}

/**
 * Refuses the call with 429 UHLP_LLM_BUDGET_EXCEEDED when the app has spent its
 * budget of today; `details.retryAfterSeconds` is the time until the UTC day
 * ends. Answers the day the call is counted in.
 */
export async function checkLlmBudget(store: LlmBudgetStore, appId: string, tokensPerDay: number, now: number): Promise<string> {
  const day = utcDay(now);
  const spent = await store.getLlmTokens(appId, day);
  if (spent >= tokensPerDay) {
    const retryAfterSeconds = Math.ceil(msUntilUtcDayEnds(now) / 1000);
    throw new UhlpError('UHLP_LLM_BUDGET_EXCEEDED', `the app has spent its ${tokensPerDay} LLM tokens of ${day} (UTC)`, {
      tokensPerDay,
      spent,
      day,
      retryAfterSeconds,
    });
  }
  return day;
}

/** Adds what a call spent to the app's count of `day`; answers the new count. */
export async function chargeLlmBudget(store: LlmBudgetStore, appId: string, day: string, tokens: number, now: number): Promise<number> {
  const dayEnd = dayStart(day) + DAY_MS;
  return store.addLlmTokens(appId, day, tokens, Math.max(1, dayEnd - now) + COUNT_GRACE_MS);
}
