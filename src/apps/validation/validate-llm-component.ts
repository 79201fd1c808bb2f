/**
 * The rules of an LLM component that its schema cannot express: the template
 * and schema files exist in the app, the output schema is JSON Schema that
 * compiles, its pool runs the llm-orchestrator, the app may call an LLM (with
 * the model it names), and every tool it offers the model is one the app's
 * capabilities allow.
 */
import { isFederatedToolName } from './validate-mcp-servers.js';
import { toolGrant } from '../../mcp/federation/tool-grant.js';
import type { AppSpec, ComponentSpec } from '../schema/app-definition-schema.js';
import { compileOutputSchema } from '../../contract/output-schema.js';
import { linearRegExpEngine } from '../../shared/linear-regexp.js';
import { findTool } from '../../mcp/tool-catalog.js';
import { isToolAvailable } from '../../mcp/tool-definition.js';
import { optimizeProblems } from '../../oracle/eligibility.js';

export interface LlmComponentContext {
  /** Tells whether an app-relative file exists in the revision. */
  fileExists(appRelativePath: string): boolean;
  /** Reads an app-relative file of the revision; undefined when it cannot be read. */
  readFile?(appRelativePath: string): string | undefined;
}

/** Problems of `component` (an LLM component) as `[JSON pointer, reason]`, the pointer under `at`. */
export function llmComponentProblems(spec: AppSpec, component: ComponentSpec, at: string, context: LlmComponentContext): Array<[string, string]> {
  const llm = component.llm;
  if (llm === undefined) return [];
  const problems: Array<[string, string]> = [];
  const add = (where: string, reason: string): void => void problems.push([`${at}/llm${where}`, reason]);
  for (const key of ['prompt', 'system'] as const) {
    const file = llm[key];
    if (file !== undefined && !context.fileExists(file)) add(`/${key}`, `"${file}" does not exist in the app directory`);
  }

  if (typeof llm.outputSchema === 'string') {
    const text = context.fileExists(llm.outputSchema) ? context.readFile?.(llm.outputSchema) : undefined;
    if (!context.fileExists(llm.outputSchema)) add('/outputSchema', `"${llm.outputSchema}" does not exist in the app directory`);
    else if (text !== undefined) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (error) {
        add('/outputSchema', `"${llm.outputSchema}" is not JSON: ${(error as Error).message}`);
      }
      if (parsed !== undefined) {
        const problem = compileOutputSchema(parsed, linearRegExpEngine).problem;
        if (problem !== undefined) add('/outputSchema', `"${llm.outputSchema}" is not a JSON Schema: ${problem}`);
      }
    }
  } else if (llm.outputSchema !== undefined) {
    const problem = compileOutputSchema(llm.outputSchema, linearRegExpEngine).problem;
    if (problem !== undefined) add('/outputSchema', `not a JSON Schema: ${problem}`);
  }

  const capability = spec.capabilities?.llm;
  if (capability === undefined) {
    problems.push([`${at}/handler`, 'an LLM component needs the llm capability (spec.capabilities.llm)']);
  } else if (llm.model !== undefined && !capability.models.includes(llm.model)) {
    add('/model', `model "${llm.model}" is not one of the llm capability's models (${capability.models.join(', ')})`);
  }

  llm.tools.forEach((name, index) => {
    const tool = findTool(name);
    if (tool === undefined && isFederatedToolName(spec, name)) {
      if (!toolGrant(spec.capabilities ?? {})(name)) add(`/tools/${index}`, `the app's capabilities do not allow ${name} (capability mcp)`);
    } else if (tool === undefined) add(`/tools/${index}`, `no tool named "${name}"`);
    else if (!isToolAvailable(tool, spec.capabilities ?? {})) add(`/tools/${index}`, `the app's capabilities do not allow ${name} (capability ${tool.capability})`);
  });
  if (llm.respond === 'httpResponse' && llm.outputSchema === undefined) {
    // Without a schema the answer is {"text": ...}, which is no HTTP response.
    add('/respond', 'httpResponse needs an outputSchema describing {statusCode, headers?, body}');
  }
  for (const [where, reason] of optimizeProblems(spec, component)) problems.push([`${at}${where}`, reason]);
  return problems;
}

/**
 * The rules of a JIT component generated from an LLM component (the oracle's
 * promotion): `fallback` names a pool with runner: llm, and the llm block it
 * falls back to is itself a valid LLM component. An llm block on a JIT
 * component without a fallback, or a fallback on another handler, is refused:
 * neither would ever run.
 */
export function fallbackProblems(spec: AppSpec, component: ComponentSpec, at: string, context: LlmComponentContext): Array<[string, string]> {
  if (component.handler !== 'JIT') {
    return component.fallback !== undefined ? [[`${at}/fallback`, `only a JIT component has a fallback; this one is ${component.handler}`]] : [];
  }
  if (component.fallback === undefined) {
    return component.llm !== undefined ? [[`${at}/llm`, 'a JIT component keeps an llm block only as its fallback: set fallback.pool']] : [];
  }
  if (component.llm === undefined) return [[`${at}/fallback`, 'a fallback needs the llm block it falls back to']];
  const problems: Array<[string, string]> = [];
  const pool = spec.pools.find((p) => p.name === component.fallback!.pool);
  if (pool === undefined) problems.push([`${at}/fallback/pool`, `pool "${component.fallback.pool}" is not declared in spec.pools`]);
  else if (pool.runner !== 'llm') problems.push([`${at}/fallback/pool`, `the llm fallback runs in a pool with runner: llm; pool "${pool.name}" has runner: ${pool.runner}`]);
  problems.push(...llmComponentProblems(spec, component, at, context));
  return problems;
}
