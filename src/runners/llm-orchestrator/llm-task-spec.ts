/**
 * `taskDetails.llm` as the orchestrator runs it: the component's llm block,
 * checked against the AppDefinition's own schema (LlmComponentSpec, the single
 * source) with its defaults filled in where the core left them out. The core
 * sends the block it validated; one that is not is refused as a bad request
 * rather than guessed at.
 */
import { Value } from '@sinclair/typebox/value';
import { firstViolation } from '../../contract/execute-contract.js';
import { LlmComponentSpec } from '../../contract/llm-component-schema.js';

export type LlmTaskSpec = LlmComponentSpec;

/** The task, or why it is not one. */
export function readLlmTaskSpec(raw: unknown): { spec: LlmTaskSpec } | { problem: string } {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { problem: 'taskDetails.llm must be an object' };
  const spec = Value.Default(LlmComponentSpec, structuredClone(raw));
  const violation = firstViolation(LlmComponentSpec, spec);
  if (violation) return { problem: `taskDetails.llm${violation.path === '/' ? '' : violation.path}: ${violation.message}` };
  return { spec: spec as LlmTaskSpec };
}
