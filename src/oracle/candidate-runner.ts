/**
 * Runs a candidate on one sample's inputs in a JIT sandbox of the app's code
 * pool, through the same path as any execution (pool lease, POST /execute,
 * contract check): never in the core. The /execute request names the
 * component as its promotion would (JIT, its llm block as fallback) and
 * carries the candidate's source and the inputs in `taskDetails.oracle`
 * (generated-code.ts). Its MCP token has the app's capabilities narrowed to
 * the component's tools; what it called, and what was refused, comes back
 * from the token's record to judge the candidate by.
 */
import { randomUUID } from 'node:crypto';
import type { ExecuteRequest } from '../contract/execute-contract.js';
import type { ComponentSpec, PoolSpec } from '../apps/schema/app-definition-schema.js';
import { UhlpError } from '../shared/errors.js';
import type { ComponentExecutor } from '../execution/component-executor.js';
import { buildExecuteContext } from '../execution/execute-context.js';
import type { McpExecutions } from '../mcp/mcp-executions.js';
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { CandidateRun, CandidateRunner } from './candidate-verifier.js';
import { candidateCapabilities } from './eligibility.js';

/** The script name candidates run under until they have one. */
export const CANDIDATE_SCRIPT = 'generated/candidate.js';
/** How long a run's MCP token outlives the pool's timeout. */
const TOKEN_GRACE_MS = 5_000;

export interface SandboxAccess {
  readonly executor: ComponentExecutor;
  readonly mcp?: McpExecutions;
  mcpEndpoint(): string;
}

/** A runner of candidates of the LLM component `component` in `pool` (runner: jit). */
export function candidateRunner(access: SandboxAccess, app: LoadedApp, component: ComponentSpec, pool: PoolSpec): CandidateRunner {
  const promoted: ComponentSpec = { ...component, handler: 'JIT', pool: pool.name, jit: { script: CANDIDATE_SCRIPT, function: 'default' }, fallback: { pool: component.pool } };
  const capabilities = candidateCapabilities(app.document.spec.capabilities ?? {}, component.llm?.tools ?? []);
  return async (source, inputs): Promise<CandidateRun> => {
    const requestId = `oracle-${randomUUID()}`;
    const token = access.mcp?.beginExecution(
      { appId: app.id, componentId: component.id, requestId, revision: app.revision, capabilities, configuration: app.document.spec.configuration ?? {} },
      pool.limits.timeoutMs + TOKEN_GRACE_MS,
    );
    const context = buildExecuteContext(app, promoted, {
      mcpEndpoint: access.mcpEndpoint(),
      timeoutMs: pool.limits.timeoutMs,
      ...(token !== undefined ? { mcpToken: token } : {}),
    });
    context.taskDetails!.oracle = { source, inputs };
    const request: ExecuteRequest = { requestId, requestData: { source: 'internal' }, context };
    let run: Omit<CandidateRun, 'toolCalls' | 'violations'>;
    try {
      const { response } = await access.executor.execute({ appId: app.id, poolName: pool.name, timeoutMs: pool.limits.timeoutMs }, requestId, JSON.stringify(request));
      run = { response };
    } catch (error) {
      run = { error: error instanceof UhlpError ? error : new UhlpError('UHLP_INTERNAL', 'the candidate run failed', undefined, { cause: error }) };
    }
    const record = token !== undefined ? access.mcp!.endExecution(token) : undefined;
    return {
      ...run,
      toolCalls: (record?.externalCalls ?? []).filter((call) => call.kind === 'mcp').map((call) => call.target),
      violations: record?.capabilityViolations.length ?? 0,
    };
  };
}
