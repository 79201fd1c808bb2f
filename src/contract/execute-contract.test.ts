import { describe, expect, it } from 'vitest';
import { validateExecuteRequest, validateExecuteResponse, type ExecuteRequest } from './execute-contract.js';

const valid: ExecuteRequest = {
  requestId: 'r-1',
  requestData: {
    source: 'http',
    httpDetails: {
      method: 'GET',
      path: '/greet/ada?x=1',
      routePattern: '/greet/:name',
      pathParameters: { name: 'ada' },
      queryParameters: { x: '1', y: ['a', 'b'] },
      headers: { accept: 'application/json' },
      body: '',
      bodyEncoding: 'utf8',
    },
  },
  context: {
    appId: 'shop',
    componentId: 'greet',
    mcp_endpoint: 'http://127.0.0.1:8080/mcp',
    stateConfig: { type: 'mcp_tool', readTool: 'core.state.getDefinitionFileContent', writeTool: 'core.state.applyStateDiff' },
    configuration: { greeting: 'Hello' },
    applicationInfo: { deploymentMode: 'development' },
  },
};

function withPatch(patch: (r: any) => void): unknown {
  const copy = structuredClone(valid);
  patch(copy);
  return copy;
}

describe('validateExecuteRequest', () => {
  it('accepts the section 2.4 example shape', () => {
    expect(validateExecuteRequest(valid)).toBeUndefined();
  });

  const cases: Array<[string, (r: any) => void, string]> = [
    ['missing requestId', (r) => delete r.requestId, '/requestId'],
    ['unknown source', (r) => (r.requestData.source = 'ftp'), '/requestData/source'],
    ['http source without httpDetails', (r) => delete r.requestData.httpDetails, '/requestData/httpDetails'],
    ['cron source without cronDetails', (r) => (r.requestData.source = 'cron'), '/requestData/cronDetails'],
    ['bad method', (r) => (r.requestData.httpDetails.method = 'BREW'), '/requestData/httpDetails/method'],
    ['bad bodyEncoding', (r) => (r.requestData.httpDetails.bodyEncoding = 'hex'), '/requestData/httpDetails/bodyEncoding'],
    ['missing mcp_endpoint', (r) => delete r.context.mcp_endpoint, '/context/mcp_endpoint'],
    ['bad deploymentMode', (r) => (r.context.applicationInfo.deploymentMode = 'prod'), '/context/applicationInfo/deploymentMode'],
  ];
  it.each(cases)('rejects %s', (_name, patch, path) => {
    expect(validateExecuteRequest(withPatch(patch))?.path).toBe(path);
  });

  it('accepts the other sources with their details', () => {
    const base = structuredClone(valid) as any;
    delete base.requestData.httpDetails;
    const sources: Array<[string, string, unknown]> = [
      ['trigger', 'triggerDetails', { sourceAppId: 'a', triggerEvent: 'e', payload: { k: 1 } }],
      ['callback', 'callbackDetails', { callbackUrl: 'http://x/cb', headers: {}, body: '', bodyEncoding: 'utf8' }],
      ['queue', 'queueDetails', { queueName: 'q', messageId: 'm', payload: {} }],
      ['cron', 'cronDetails', { jobId: 'j', scheduledTime: '2026-01-01T00:00:00Z' }],
      ['internal', 'internalDetails', {}],
    ];
    for (const [source, key, details] of sources) {
      expect(validateExecuteRequest({ ...base, requestData: { source, [key]: details } }), source).toBeUndefined();
    }
  });
});

describe('validateExecuteResponse', () => {
  const cases: Array<[string, unknown, string | undefined]> = [
    ['generic', { requestId: 'r', resultType: 'generic', data: [1] }, undefined],
    ['generic with metrics', { requestId: 'r', resultType: 'generic', data: null, metrics: { execution_time_ms: 3, mcp_calls: [{ tool: 't', count: 1, total_duration_ms: 2 }] } }, undefined],
    ['httpResponse', { requestId: 'r', resultType: 'httpResponse', data: { statusCode: 201, headers: { a: 'b' }, body: 'x', bodyEncoding: 'utf8' } }, undefined],
    ['httpResponse without statusCode', { requestId: 'r', resultType: 'httpResponse', data: { body: 'x' } }, '/data/statusCode'],
    ['httpResponse status 99', { requestId: 'r', resultType: 'httpResponse', data: { statusCode: 99 } }, '/data/statusCode'],
    ['error', { requestId: 'r', resultType: 'error', data: { code: 'C', message: 'm', details: { a: 1 } } }, undefined],
    ['error without code', { requestId: 'r', resultType: 'error', data: { message: 'm' } }, '/data/code'],
    ['workflowStep', { requestId: 'r', resultType: 'workflowStep', data: { workflowId: 'w', stepId: 's', status: 'failed', error: {} } }, undefined],
    ['unknown resultType', { requestId: 'r', resultType: 'stream', data: {} }, '/resultType'],
    ['missing requestId', { resultType: 'generic', data: {} }, '/requestId'],
    ['negative execution time', { requestId: 'r', resultType: 'generic', data: 1, metrics: { execution_time_ms: -1 } }, '/metrics/execution_time_ms'],
  ];
  it.each(cases)('%s', (_name, response, path) => {
    expect(validateExecuteResponse(response)?.path).toBe(path);
  });
});
