/**
 * Output schemas of LLM components: JSON Schema 2020-12, compiled by ajv with
 * the standard formats. The core compiles them when an app loads (a schema that
 * does not compile is a definition problem) and checks answers against them
 * (the oracle), with a linear-time pattern engine of its own, so an app's
 * `pattern` never backtracks on the core's event loop; the llm-orchestrator
 * compiles the same schema to judge answers, within its sandbox's time limit.
 */
import { Ajv2020, type CodeOptions, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/** The engine of a schema's patterns (ajv's `code.regExp`). @defaultValue JavaScript's RegExp */
export type PatternEngine = NonNullable<CodeOptions['regExp']>;

const instances = new Map<PatternEngine | undefined, Ajv2020>();

function ajvWith(patterns: PatternEngine | undefined): Ajv2020 {
  let ajv = instances.get(patterns);
  if (ajv === undefined) {
    ajv = new Ajv2020({ allErrors: true, strict: false, ...(patterns !== undefined ? { code: { regExp: patterns } } : {}) });
    addFormats.default(ajv);
    instances.set(patterns, ajv);
  }
  return ajv;
}

/** The compiled validator, or why the schema does not compile (with `patterns`, a pattern that engine cannot run too). */
export function compileOutputSchema(schema: unknown, patterns?: PatternEngine): { validate?: ValidateFunction; problem?: string } {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return { problem: 'a JSON Schema is an object' };
  try {
    return { validate: ajvWith(patterns).compile(schema as object) };
  } catch (error) {
    return { problem: (error as Error).message };
  }
}
