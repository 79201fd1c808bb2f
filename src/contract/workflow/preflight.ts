/**
 * Pre-flight feasibility (seed 004 §2): constraints on blackboard variables,
 * checked before the run starts and before each node that names its own. A
 * failed required constraint aborts the run with its error_message (422
 * UHLP_WORKFLOW_PREFLIGHT_FAILED); one that is not required is only recorded.
 *
 * | operator | holds when |
 * | --- | --- |
 * | exists | the variable is present and not null |
 * | eq, ne | the variable equals (does not equal) the value, as JSON |
 * | gt, gte, lt, lte | both are numbers, or both strings (compared as text) |
 * | contains | a string holds the value as a substring; a list holds an element equal to it; an object has it as a key |
 * | matches | a string matches the value, a regular expression (Unicode; on its first 10000 characters) |
 *
 * `field: length` compares the length of a string, list or object (its keys)
 * instead of the variable; a variable without a length fails.
 */
import { readPath } from './blackboard.js';
import type { Constraint } from './workflow-schema.js';

/** Characters of a string that `matches` looks at: a hostile input cannot make a pattern run on megabytes. */
const MATCH_LIMIT = 10_000;

export interface ConstraintOutcome {
  readonly constraint: Constraint;
  readonly passed: boolean;
  /** What was compared (the length with `field: length`), for the trace. */
  readonly actual: unknown;
}

export interface PreflightResult {
  readonly outcomes: readonly ConstraintOutcome[];
  /** The first required constraint that failed: the run aborts with its error_message. */
  readonly failed?: ConstraintOutcome;
}

const patterns = new Map<string, RegExp>();

export function checkConstraints(constraints: readonly Constraint[], board: unknown): PreflightResult {
  const outcomes: ConstraintOutcome[] = [];
  let failed: ConstraintOutcome | undefined;
  for (const constraint of constraints) {
    const outcome = checkConstraint(constraint, board);
    outcomes.push(outcome);
    if (!outcome.passed && constraint.required !== false && failed === undefined) failed = outcome;
  }
  return failed !== undefined ? { outcomes, failed } : { outcomes };
}

export function checkConstraint(constraint: Constraint, board: unknown): ConstraintOutcome {
  const raw = readPath(board, constraint.variable);
  const actual = constraint.field === 'length' ? lengthOf(raw) : raw;
  return { constraint, actual: actual ?? null, passed: holds(constraint, actual) };
}

function holds(constraint: Constraint, actual: unknown): boolean {
  const expected = constraint.value;
  switch (constraint.operator) {
    case 'exists':
      return actual !== undefined && actual !== null;
    case 'eq':
      return actual !== undefined && jsonEqual(actual, expected);
    case 'ne':
      return !jsonEqual(actual ?? null, expected);
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const comparable = (typeof actual === 'number' && typeof expected === 'number') || (typeof actual === 'string' && typeof expected === 'string');
      if (!comparable || (typeof actual === 'number' && Number.isNaN(actual))) return false;
      const a = actual as number | string;
      const b = expected as number | string;
      return constraint.operator === 'gt' ? a > b : constraint.operator === 'gte' ? a >= b : constraint.operator === 'lt' ? a < b : a <= b;
    }
    case 'contains':
      if (typeof actual === 'string') return typeof expected === 'string' && actual.includes(expected);
      if (Array.isArray(actual)) return actual.some((item) => jsonEqual(item, expected));
      if (typeof actual === 'object' && actual !== null) return typeof expected === 'string' && Object.prototype.hasOwnProperty.call(actual, expected);
      return false;
    case 'matches': {
      if (typeof actual !== 'string' || typeof expected !== 'string') return false;
      let pattern = patterns.get(expected);
      if (pattern === undefined) {
        try {
          pattern = new RegExp(expected, 'u');
        } catch {
          return false;
        }
        if (patterns.size > 256) patterns.clear();
        patterns.set(expected, pattern);
      }
      return pattern.test(actual.slice(0, MATCH_LIMIT));
    }
  }
}

function lengthOf(value: unknown): number | undefined {
  if (typeof value === 'string' || Array.isArray(value)) return value.length;
  if (typeof value === 'object' && value !== null) return Object.keys(value).length;
  return undefined;
}

/** Equality of JSON values: same type, same items in order, same keys in any order. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => jsonEqual(item, other[i]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  return keys.length === Object.keys(right).length && keys.every((key) => Object.prototype.hasOwnProperty.call(right, key) && jsonEqual(left[key], right[key]));
}
