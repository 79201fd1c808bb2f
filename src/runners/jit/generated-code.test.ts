import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ExecuteRequest } from '../../contract/execute-contract.js';
import { createJitExecutor } from './jit-executor.js';
import { DECLINED_CODE } from '../../contract/generated-code.js';
import { resultFromThrown } from '../kit/script-result.js';
import type { ExecutionTools } from '../kit/tools-client.js';

const REVISION = 'a'.repeat(40);
const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-generated-'));
mkdirSync(path.join(root, REVISION, 'generated'), { recursive: true });
writeFileSync(
  path.join(root, REVISION, 'generated', 'classify-0123456789ab.js'),
  "export default async function (event, ctx) { if (event.body.text.includes('?')) return ctx.fallback('a question'); return { label: event.body.text.includes('refund') ? 'billing' : 'other', user: event.headers['x-user'] }; }\n",
);

function request(body: string, task: Record<string, unknown> = {}): ExecuteRequest {
  return {
    requestId: 'r-1',
    requestData: {
      source: 'http',
      httpDetails: { method: 'POST', path: '/c', queryParameters: {}, headers: { 'content-type': 'application/json', 'x-user': 'ada' }, body, bodyEncoding: 'utf8' },
    },
    context: {
      appId: 'desk',
      componentId: 'classify',
      mcp_endpoint: 'http://core/mcp',
      stateConfig: { type: 'mcp_tool' },
      configuration: {},
      applicationInfo: { deploymentMode: 'development' },
      taskDetails: { handler: 'JIT', revision: REVISION, script: 'generated/classify-0123456789ab.js', function: 'default', llm: { prompt: 'p.njk' }, ...task },
    },
  };
}

const noTools = { call: async () => ({}) } as unknown as ExecutionTools;
const run = (req: ExecuteRequest) => createJitExecutor({ definitionsRoot: root })(req, noTools).catch(resultFromThrown);

describe('generated code in the jit-runner', () => {
  it('gets the template variables of its llm block as the event', async () => {
    const first = await run(request('{"text":"refund please"}'));
    expect(first).toEqual({ resultType: 'generic', data: { label: 'billing', user: 'ada' }, metrics: { script_load_ms: expect.any(Number) } });
  });

  it('declines an input with ctx.fallback(), answered as UHLP_ORACLE_DECLINED', async () => {
    expect(await run(request('{"text":"why?"}'))).toMatchObject({ resultType: 'error', data: { code: DECLINED_CODE, message: 'a question' } });
  });

  it('runs a candidate from its source with the inputs of a sample, and refuses a malformed one', async () => {
    const source = 'export default (event) => ({ twice: event.body.n * 2 });';
    expect(await run(request('{}', { oracle: { source, inputs: { body: { n: 21 } } } }))).toEqual({ resultType: 'generic', data: { twice: 42 } });
    expect(await run(request('{}', { oracle: { source: 'export const x = 1;', inputs: {} } }))).toMatchObject({ resultType: 'error', data: { code: 'UHLP_FUNCTION_NOT_FOUND' } });
    expect(await run(request('{}', { oracle: { source: 'export default (', inputs: {} } }))).toMatchObject({ resultType: 'error', data: { code: 'UHLP_SCRIPT_LOAD_FAILED' } });
    expect(await run(request('{}', { oracle: { source, inputs: [] } }))).toMatchObject({ resultType: 'error', data: { code: 'UHLP_EXECUTE_BAD_REQUEST' } });
  });
});
