import { describe, expect, it } from 'vitest';
import type { ComponentSpec } from '../apps/schema/app-definition-schema.js';
import type { LoadedApp } from '../apps/app-snapshot.js';
import { buildExecuteContext, ExecuteContextWriter } from './execute-context.js';

const app = {
  id: 'shop',
  revision: 'abc123',
  document: { spec: { configuration: { greeting: 'Hi "there"' }, deploymentMode: 'development' } },
} as unknown as LoadedApp;
const component = { id: 'greet', handler: 'JIT', pool: 'p', jit: { script: 'scripts/g.js', function: 'default' } } as unknown as ComponentSpec;

describe('ExecuteContextWriter', () => {
  const cases: Array<[string, Parameters<ExecuteContextWriter['json']>[2]]> = [
    ['token and session', { mcpEndpoint: 'http://127.0.0.1:1/mcp', mcpToken: 'uhlp_mcp_x', sessionId: 'SES-1', timeoutMs: 100 }],
    ['no token', { mcpEndpoint: 'http://127.0.0.1:1/mcp', sessionId: 'SES-2', timeoutMs: 100 }],
    ['no session', { mcpEndpoint: 'http://127.0.0.1:1/mcp', mcpToken: 'uhlp_mcp_y', timeoutMs: 100 }],
    ['another endpoint and timeout', { mcpEndpoint: 'http://127.0.0.1:2/mcp', mcpToken: 'uhlp_mcp_z', timeoutMs: 250 }],
  ];
  const writer = new ExecuteContextWriter();
  it.each(cases)('writes the same context as buildExecuteContext: %s', (_name, options) => {
    expect(JSON.parse(writer.json(app, component, options))).toEqual(buildExecuteContext(app, component, options));
  });
});

describe("ExecuteContextWriter, a workflow run's execution", () => {
  const flow = { id: 'flow', handler: 'WORKFLOW', pool: 'brain', workflow: { workflowId: 'steps' } } as unknown as ComponentSpec;
  const options = { mcpEndpoint: 'http://127.0.0.1:1/mcp', mcpToken: 'uhlp_mcp_x', sessionId: 'SES-1', timeoutMs: 100, workflowRunId: 'RUN-1-abc' };
  const writer = new ExecuteContextWriter();

  it('carries the run in workflowInfo, with no load answer when none is given', () => {
    const context = JSON.parse(writer.json(app, flow, options));
    expect(context).toEqual(buildExecuteContext(app, flow, options));
    expect(context.workflowInfo).toEqual({ workflowId: 'steps', runId: 'RUN-1-abc' });
  });

  it("carries the run's load answer in workflowInfo.loaded as the JSON it was given, the rest as buildExecuteContext's", () => {
    const loaded = { run: { id: 'RUN-1-abc', state: { blackboard: { quote: 'a "b" \\ c\u2028', '}': ['{'] } } }, workflowFile: 'workflows/steps.yaml', components: {} };
    const context = JSON.parse(writer.json(app, flow, { ...options, workflowLoaded: JSON.stringify(loaded) }));
    const { workflowInfo, ...rest } = context;
    const { workflowInfo: expected, ...expectedRest } = buildExecuteContext(app, flow, options);
    expect(rest).toEqual(expectedRest);
    expect(workflowInfo).toEqual({ ...expected, loaded });
  });
});
