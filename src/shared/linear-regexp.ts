/**
 * Regular expressions that others wrote (an app's output schemas, a remote
 * server's), run by the core with a linear-time engine (RE2, in JavaScript):
 * matching costs time in proportion to the input, never the exponential
 * backtracking of `^(a+)+$` on `aaaa…!` that would stall the core's event loop
 * for every app. Patterns RE2 cannot run in linear time (lookaround,
 * backreferences) do not compile: their schema is refused, not run unbounded.
 */
import { RE2JS } from 're2js';
import type { CodeOptions } from 'ajv/dist/2020.js';

type RegExpEngine = NonNullable<CodeOptions['regExp']>;
/** What a pattern engine gives ajv: a test of a string. */
export interface RegExpLike {
  test(text: string): boolean;
  /** Names the pattern: ajv keys its compiled patterns by it. */
  toString(): string;
}

/** A pattern compiled by RE2: `test` finds it anywhere in the string, as a JSON Schema `pattern` does. */
export function linearRegExp(pattern: string, flags = ''): RegExpLike {
  const re = RE2JS.compile(RE2JS.translateRegExp(pattern), flags.includes('i') ? RE2JS.CASE_INSENSITIVE : 0);
  return {
    test: (text: string): boolean => re.test(text),
    toString: (): string => `re2:${flags}:${pattern}`,
  };
}

/** ajv's `code.regExp` option: every `pattern`, `patternProperties` and `propertyNames` pattern of a schema runs on RE2. */
export const linearRegExpEngine: RegExpEngine = Object.assign((pattern: string, u: string): RegExpLike => linearRegExp(pattern, u), {
  code: 'linearRegExp',
});
