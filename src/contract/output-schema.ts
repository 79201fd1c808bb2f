/**
 * Output schemas of LLM components: JSON Schema 2020-12, compiled by ajv with
 * the standard formats. The core compiles them when an app loads (a schema that
 * does not compile is a definition problem); the llm-orchestrator compiles the
 * same schema to judge answers.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats.default(ajv);

/** The compiled validator, or why the schema does not compile. */
export function compileOutputSchema(schema: unknown): { validate?: ValidateFunction; problem?: string } {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return { problem: 'a JSON Schema is an object' };
  try {
    return { validate: ajv.compile(schema as object) };
  } catch (error) {
    return { problem: (error as Error).message };
  }
}
