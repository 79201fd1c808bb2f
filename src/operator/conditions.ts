/**
 * Conditions in the metav1.Condition style: lastTransitionTime moves only when the
 * status flips, so rewriting an unchanged condition changes nothing and the
 * reconciler can skip the status write.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Condition } from '../apps/schema/sandbox-pool-schema.js';

export type ConditionInput = Omit<Condition, 'lastTransitionTime'>;

/** The conditions with `next` set: replaced in place, or appended; other types are kept. */
export function setCondition(conditions: Condition[] | undefined, next: ConditionInput, now: Date): Condition[] {
  const current = conditions ?? [];
  const previous = current.find((condition) => condition.type === next.type);
  const lastTransitionTime =
    previous && previous.status === next.status ? previous.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const updated: Condition = { ...next, lastTransitionTime };
  return previous ? current.map((condition) => (condition === previous ? updated : condition)) : [...current, updated];
}

/** The condition of a type, if present. */
export function findCondition(conditions: Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((condition) => condition.type === type);
}

/** Deep equality of two status objects, for "write status only when it changed". */
export function sameStatus(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(normalise(a), normalise(b));
}

// A status read back from the server has no undefined members; drop ours before comparing.
function normalise(value: unknown): unknown {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}
