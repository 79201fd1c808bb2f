/**
 * Which LLM components the optimization oracle may replace by code, and with
 * what. A component is eligible when its answers can be judged and repeated:
 * an output schema (the answer is JSON that validates), temperature 0 (the same
 * inputs give the same answer), a generic answer (compared as it is, not as an
 * HTTP response), and tools that only read — verification runs the candidate on
 * old samples, and a tool that writes would repeat its effect each time. The
 * code runs in a pool with `runner: jit` of the same app, with the same
 * capabilities narrowed to the component's tools (`candidateCapabilities`).
 */
import { toolGrant } from '../mcp/federation/tool-grant.js';
import type { AppSpec, CapabilitiesSpec, ComponentSpec, OptimizeSpec, PoolSpec } from '../apps/schema/app-definition-schema.js';
import { activeOptimize } from '../contract/llm-component-schema.js';
import { MIN_HELD_BACK } from './sample-split.js';

/** Tools generated code may call through ctx.tools: they read and change nothing. */
export const READ_ONLY_TOOLS: ReadonlySet<string> = new Set(['core.kv.get', 'core.state.getDefinitionFileContent', 'core.framework.getConfigValue', 'core.log']);


/** The pool that verifies and serves the generated code: `optimize.pool`, else the app's first jit pool. */
export function codePool(spec: AppSpec, optimize: OptimizeSpec): PoolSpec | undefined {
  if (optimize.pool !== undefined) return spec.pools.find((pool) => pool.name === optimize.pool && pool.runner === 'jit');
  return spec.pools.find((pool) => pool.runner === 'jit');
}

/**
 * Why the component cannot be optimized, as `[JSON pointer under llm/optimize's parent, reason]`;
 * empty when it can (or when it is not optimized at all).
 */
export function optimizeProblems(spec: AppSpec, component: ComponentSpec): Array<[string, string]> {
  const llm = component.llm;
  const optimize = activeOptimize(llm);
  if (llm === undefined || optimize === undefined) return [];
  const problems: Array<[string, string]> = [];
  const why = (where: string, reason: string): void => void problems.push([where, `optimize.mode ${optimize.mode} needs ${reason}`]);
  if (llm.outputSchema === undefined) why('/llm/outputSchema', 'an outputSchema: answers are compared as validated JSON');
  if (llm.temperature !== 0) why('/llm/temperature', 'temperature: 0: the same inputs must give the same answer');
  if (llm.respond !== 'generic') why('/llm/respond', 'respond: generic: answers are compared as JSON, not as HTTP responses');
  llm.tools.forEach((tool, index) => {
    if (!READ_ONLY_TOOLS.has(tool)) why(`/llm/tools/${index}`, `tools that only read (${[...READ_ONLY_TOOLS].join(', ')}): verification replays old samples, and ${tool} would repeat its effect`);
  });
  const heldBack = heldBackAt(optimize);
  if (heldBack < MIN_HELD_BACK) {
    // Checked only when code is asked for, it would send the component from sampling to generating and back on every scan.
    const needed = Math.ceil(MIN_HELD_BACK / optimize.holdout - 1e-9);
    problems.push([
      '/llm/optimize/minSamples',
      `minSamples ${optimize.minSamples} with holdout ${optimize.holdout} holds back about ${heldBack} of them; a candidate is judged on at least ${MIN_HELD_BACK} held-back samples: raise minSamples to ${needed} or more, or holdout`,
    ]);
  }
  if (optimize.pool !== undefined) {
    const pool = spec.pools.find((p) => p.name === optimize.pool);
    if (pool === undefined) problems.push(['/llm/optimize/pool', `pool "${optimize.pool}" is not declared in spec.pools`]);
    else if (pool.runner !== 'jit') problems.push(['/llm/optimize/pool', `pool "${optimize.pool}" has runner: ${pool.runner}; generated code runs in a pool with runner: jit`]);
  } else if (codePool(spec, optimize) === undefined) {
    why('/llm/optimize', 'a pool with runner: jit in spec.pools, where the generated code is verified and served');
  }
  return problems;
}

/** The held-back samples `minSamples` samples give at `holdout`, as the split gives them on average (whole samples). */
function heldBackAt(optimize: Pick<OptimizeSpec, 'minSamples' | 'holdout'>): number {
  // The epsilon keeps 0.3 * 40 from flooring to 11.
  return Math.floor(optimize.minSamples * optimize.holdout + 1e-9);
}

/**
 * The capabilities generated code runs with: the app's, narrowed to what the
 * component's tools need. A kv tool keeps the kv capability with only its
 * operations; a federated tool (app.* or community.*) the app grants keeps
 * the mcp capability for exactly the listed ones; every other capability (llm,
 * shell, web, state) goes, so a call to a tool the component does not list is
 * refused and recorded as a violation.
 */
export function candidateCapabilities(capabilities: CapabilitiesSpec, tools: readonly string[]): CapabilitiesSpec {
  const narrowed: CapabilitiesSpec = {};
  const kvOps = tools.filter((tool) => tool.startsWith('core.kv.')).map((tool) => tool.slice('core.kv.'.length));
  if (capabilities.kv !== undefined && kvOps.length > 0) {
    narrowed.kv = { ...capabilities.kv, ops: capabilities.kv.ops.filter((op) => kvOps.includes(op)) };
  }
  const granted = toolGrant(capabilities);
  const federated = tools.filter((tool) => (tool.startsWith('app.') || tool.startsWith('community.')) && granted(tool));
  if (capabilities.mcp !== undefined && federated.length > 0) narrowed.mcp = { allow: federated, forbidden: capabilities.mcp.forbidden };
  return narrowed;
}
