import { describe, expect, it } from 'vitest';
import { AppSnapshot, type LoadedApp } from '../apps/app-snapshot.js';
import { validateAppDefinition } from '../apps/validation/validate-app-definition.js';
import { newTurnEvidence } from '../ledger/turn-evidence.js';
import type { McpExecutions } from '../mcp/mcp-executions.js';
import type { GrantBinding } from '../mcp/mcp-token-service.js';
import type { TurnEvent } from '../turns/turn-event.js';
import type { Turn } from '../turns/turn-keeper.js';
import type { ExecutionTarget, TurnWrites } from './component-executor.js';
import { ExecuteContextWriter } from './execute-context.js';
import { SandboxExecution } from './sandbox-execution.js';

function loadedApp(tools?: Array<Record<string, unknown>>): LoadedApp {
  const result = validateAppDefinition(
    {
      apiVersion: 'uhlp.dev/v1alpha1',
      kind: 'AppDefinition',
      metadata: { name: 'unit' },
      spec: {
        ingress: {},
        pools: [{ name: 'p', limits: { timeoutMs: 2000 } }],
        components: [{ id: 'a', handler: 'JIT', pool: 'p', jit: { script: 'a.js' } }],
        routes: [{ http: { method: 'GET', path: '/x' }, component: 'a' }],
        ...(tools !== undefined ? { tools } : {}),
      },
    },
    { file: 'apps/unit/app.yaml', appDirName: 'unit', fileExists: () => true },
  );
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return new AppSnapshot('0123456789abcdef', [{ file: 'apps/unit/app.yaml', document: result.document }], []).apps.get('unit')!;
}

/** Records what the base execution hands the sandbox side and the MCP server, and answers at once. */
function harness(app: LoadedApp) {
  const bindings: Array<{ binding: GrantBinding; ttlMs: number }> = [];
  const executions: Array<{ target: ExecutionTarget; body: unknown; writes: TurnWrites | undefined }> = [];
  const mcp: McpExecutions = {
    beginExecution(binding, ttlMs) {
      bindings.push({ binding, ttlMs });
      return `token-${bindings.length}`;
    },
    endExecution: () => ({
      calls: [{ tool: 'core.kv.get', total_duration_ms: 1 }],
      externalCalls: [{ kind: 'mcp', target: 'core.kv.get', timestamp: 't' }],
      capabilityViolations: [],
    }) as never,
  };
  const execution = new SandboxExecution(
    {
      executor: {
        async execute(target, requestId, body, _traceId, writes) {
          executions.push({ target, body: JSON.parse(body), writes });
          return { response: { requestId, resultType: 'generic', data: 1, metrics: { execution_time_ms: 1 } }, text: '{}' };
        },
      },
      contexts: new ExecuteContextWriter(),
      mcpEndpoint: () => 'http://127.0.0.1:9/mcp',
      mcp,
      outputsRoot: '/data/output',
    },
    app,
  );
  return { execution, bindings, executions };
}

function eventOf(app: LoadedApp, extra: Partial<TurnEvent> = {}): TurnEvent {
  const component = app.components.get('a')!;
  return { app, component, pool: app.pools.get('p')!, requestId: 'req-1', requestDataJson: '{"source":"internal"}', session: undefined, declaredOutputs: [], ...extra };
}

const stored: Turn = { sessionId: 'SES-1', turnNumber: 3, tier: 'dev', ambient: false, sampled: true };
const ambient: Turn = { ...stored, ambient: true };

describe('SandboxExecution', () => {
  it('binds a plain turn\'s token to the app alone and keeps a stored session\'s outputs', async () => {
    const app = loadedApp();
    const { execution, bindings, executions } = harness(app);
    const evidence = newTurnEvidence();
    const result = await execution.execute({ event: eventOf(app), turn: stored, evidence });
    expect(bindings).toEqual([{ binding: { appId: 'unit', componentId: 'a', requestId: 'req-1', revision: '0123456789abcdef', capabilities: {}, configuration: {} }, ttlMs: 12_000 }]);
    expect(executions[0]!.target).toEqual({ appId: 'unit', poolName: 'p', timeoutMs: 2000, script: { revision: '0123456789abcdef', path: 'a.js' } });
    expect(executions[0]!.writes).toMatchObject({ sessionId: 'SES-1', outputsRoot: '/data/output' });
    expect(executions[0]!.body).toMatchObject({ requestId: 'req-1', context: { mcp_token: 'token-1', sessionId: 'SES-1', turnNumber: 3 } });
    // The core's own count of MCP calls, and its calls in the turn's evidence.
    expect(result.response.metrics?.mcp_calls).toEqual([{ tool: 'core.kv.get', total_duration_ms: 1 }]);
    expect(evidence.externalCalls).toHaveLength(1);
  });

  it('binds a workflow run\'s execution to its run, its stored session and the run\'s time left', async () => {
    const app = loadedApp();
    const { execution, bindings, executions } = harness(app);
    await execution.execute({ event: eventOf(app, { workflowRun: { runId: 'RUN-1', owner: true, timeoutMs: 500 } }), turn: stored, evidence: newTurnEvidence() });
    await execution.execute({ event: eventOf(app, { workflowRun: { runId: 'RUN-1', owner: false } }), turn: ambient, evidence: newTurnEvidence() });
    expect(bindings[0]).toMatchObject({ binding: { run: { id: 'RUN-1', owner: true }, sessionId: 'SES-1' }, ttlMs: 10_500 });
    expect(bindings[1]!.binding).toMatchObject({ run: { id: 'RUN-1', owner: false } });
    expect(bindings[1]!.binding.sessionId).toBeUndefined();
    expect(executions[0]!.target.timeoutMs).toBe(500);
  });

  it('carries the app\'s critical tools on every token, and a stream only to the turn itself', async () => {
    const app = loadedApp([
      { name: 'core.kv.set', risk_level: 'critical' },
      { name: 'core.kv.get', risk_level: 'low' },
    ]);
    const { execution, bindings, executions } = harness(app);
    const stream = { packet: () => undefined, delta: () => undefined } as unknown as NonNullable<TurnEvent['stream']>;
    const evidence = newTurnEvidence();
    await execution.execute({ event: eventOf(app, { stream }), turn: stored, evidence });
    const component = app.components.get('a')!;
    await execution.execute({ event: eventOf(app, { stream }), turn: stored, evidence, view: { component, pool: app.pools.get('p')!, background: true } });
    expect([...(bindings[0]!.binding.criticalTools ?? [])]).toEqual(['core.kv.set']);
    expect(bindings[0]!.binding.stream).toBe(stream);
    expect([...(bindings[1]!.binding.criticalTools ?? [])]).toEqual(['core.kv.set']);
    expect(bindings[1]!.binding.stream).toBeUndefined();
    // A comparison after the answer is not the turn: its outputs are not kept, its calls not the turn's evidence.
    expect(executions[1]!.writes?.outputsRoot).toBeUndefined();
    expect(executions[1]!.writes?.evidence).not.toBe(evidence);
    expect(evidence.externalCalls).toHaveLength(1);
  });
});
