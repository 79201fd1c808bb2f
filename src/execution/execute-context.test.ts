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
