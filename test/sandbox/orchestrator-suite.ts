/**
 * The llm-orchestrator inside a real sandbox (a bubblewrap process, a Docker
 * container), driven through its driver: POST /execute with LLM tasks, and a
 * fake MCP server on the mounted socket standing in for the core (app files,
 * a scripted core.llm.generate speaking the issue 13 contract, core.kv.get
 * with a capability refusal). What the unit tests check with a fake client,
 * checked here across the sandbox boundary.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateExecuteResponse, type ExecuteRequest, type ExecuteResponse } from '../../src/contract/execute-contract.js';
import { SandboxClient } from '../../src/sandbox/sandbox-client.js';
import type { SandboxDriver, SandboxHandle } from '../../src/sandbox/sandbox-driver.js';
import { FAKE_MCP_TOKEN, FakeToolError, startFakeMcpServer, type FakeMcpServer } from '../helpers/fake-mcp-server.js';
import { makeSuiteDefinitions, suitePool, SUITE_REVISION } from './driver-suite.js';

type ModelAnswer = { text: string | null; toolCalls?: Array<{ id: string; name: string; arguments: string }> };

const FILES: Record<string, string> = {
  'prompts/system.njk': 'You triage tickets for {{ app.id }}. Tone: {{ config.tone }}.',
  'prompts/triage.njk': [
    '{% include "prompts/preamble.njk" %}',
    '{% import "prompts/macros.njk" as m %}{{ m.field("title", body.title) }}',
    'ticket={{ params.id }} lang={{ query.lang }} user={{ headers["x-user"] }} method={{ request.httpDetails.method }}',
    'session={{ session.id }}#{{ session.turn }} component={{ component.id }}',
  ].join('\n'),
  'prompts/preamble.njk': 'Read the ticket.',
  'prompts/macros.njk': '{% macro field(name, value) %}{{ name }}: {{ value }}{% endmacro %}',
  'prompts/hostile.njk': '{{ range.constructor("return process")().pid }}',
  'prompts/broken.njk': 'line one\n{% include "prompts/missing.njk" %}',
  'schemas/triage.json': JSON.stringify({ type: 'object', properties: { label: { enum: ['bug', 'question'] } }, required: ['label'], additionalProperties: false }),
};

const RESPONSE_SCHEMA = { type: 'object', properties: { statusCode: { type: 'integer' }, headers: { type: 'object' }, body: {} }, required: ['statusCode', 'body'] };

export interface OrchestratorSuiteOptions {
  makeDriver(): SandboxDriver | Promise<SandboxDriver>;
  labels?: Record<string, string>;
}

export function describeOrchestrator(name: string, options: OrchestratorSuiteOptions): void {
  describe(`the llm-orchestrator under the ${name} driver`, () => {
    let driver: SandboxDriver;
    let handle: SandboxHandle;
    let client: SandboxClient;
    let mcp: FakeMcpServer;
    /** What the model answers next; each test scripts its own. */
    let answers: ModelAnswer[] = [];
    let sequence = 0;

    beforeAll(async () => {
      mcp = await startFakeMcpServer({
        revision: SUITE_REVISION,
        files: FILES,
        tools: {
          'core.llm.generate': (args) => {
            const answer = answers.shift();
            if (!answer) throw new FakeToolError('UHLP_LLM_BUDGET_EXCEEDED', 'the app spent its tokens for today', 429, { retryAfterSeconds: 5400 });
            const prompt = JSON.stringify(args['messages']).length;
            return { text: answer.text, toolCalls: answer.toolCalls ?? [], finishReason: answer.toolCalls ? 'tool_calls' : 'stop', model: 'small', usage: { prompt, completion: 7 }, cached: false };
          },
          'core.kv.get': (args) => {
            if (String(args['key']).startsWith('secret:')) throw new FakeToolError('UHLP_CAPABILITY_DENIED', `kv key ${String(args['key'])} is outside the allowed prefixes`, 403, { capability: 'kv', rule: 'prefixes' });
            return { value: 41 };
          },
        },
        listed: [{ name: 'core.kv.get', description: 'Reads a key.', inputSchema: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] } }],
      });
      driver = await options.makeDriver();
      handle = await driver.create({
        appId: 'suite',
        pool: suitePool({ runner: 'llm' }),
        // The orchestrator gets no definitions mount: an empty root proves it reads through MCP.
        definitionsRoot: makeSuiteDefinitions(),
        mcpSocket: mcp.socketPath,
        labels: options.labels ?? {},
      });
      client = new SandboxClient(handle.endpoint);
    });
    afterAll(async () => {
      client?.close();
      if (handle) await driver.destroy(handle, 'shutdown');
      await driver?.close();
      await mcp?.close();
    });

    async function execute(llm: Record<string, unknown>, extra: { headers?: Record<string, string> } = {}): Promise<ExecuteResponse> {
      const requestId = `o-${++sequence}`;
      const request: ExecuteRequest = {
        requestId,
        requestData: {
          source: 'http',
          httpDetails: {
            method: 'POST',
            path: '/tickets/42?lang=en',
            routePattern: '/tickets/:id',
            pathParameters: { id: '42' },
            queryParameters: { lang: 'en' },
            headers: { 'content-type': 'application/json', 'x-user': 'ada', ...extra.headers },
            body: '{"title":"it crashes"}',
            bodyEncoding: 'utf8',
          },
        },
        context: {
          appId: 'helpdesk',
          componentId: 'triage',
          mcp_endpoint: 'http://core/mcp',
          mcp_token: FAKE_MCP_TOKEN,
          stateConfig: { type: 'mcp_tool' },
          configuration: { tone: 'brief' },
          applicationInfo: { deploymentMode: 'development' },
          sessionId: 'SES-1-abc',
          turnNumber: 3,
          taskDetails: { handler: 'LLM', revision: SUITE_REVISION, llm: llm as { prompt: string }, declaredOutputs: [{ path: 'output/triage.json', role: 'result' }] },
        },
      };
      const response = await client.execute(JSON.stringify(request), requestId, 10_000);
      expect(response.status).toBe(200);
      const answer = JSON.parse(response.body.toString()) as ExecuteResponse;
      expect(validateExecuteResponse(answer)).toBeUndefined();
      return answer;
    }

    const generateCalls = (): Array<Record<string, unknown>> => mcp.calls.filter((call) => call.name === 'core.llm.generate').map((call) => call.args);

    it('renders the templates with every variable, an include and an import, read through MCP', async () => {
      answers = [{ text: 'noted' }];
      const before = generateCalls().length;
      const answer = await execute({ prompt: 'prompts/triage.njk', system: 'prompts/system.njk', model: 'small', temperature: 0 });
      expect(answer).toMatchObject({ resultType: 'generic', data: { text: 'noted' } });
      expect(generateCalls().slice(before)).toEqual([
        {
          model: 'small',
          temperature: 0,
          // Named for the client's event stream; the core drops the text when no client asked for one.
          stream: { id: 'default', node: 'triage' },
          messages: [
            { role: 'system', content: 'You triage tickets for helpdesk. Tone: brief.' },
            { role: 'user', content: 'Read the ticket.\ntitle: it crashes\nticket=42 lang=en user=ada method=POST\nsession=SES-1-abc#3 component=triage' },
          ],
        },
      ]);
      // The runner reports its MCP calls, the model's tokens included.
      expect(answer.metrics?.mcp_calls).toEqual(
        expect.arrayContaining([expect.objectContaining({ tool: 'core.llm.generate', count: 1, token_usage: { prompt: expect.any(Number), completion: 7 } })]),
      );
    });

    it('re-asks an answer that fails the schema with the errors, and answers the valid one', async () => {
      answers = [{ text: 'a bug, I think' }, { text: '```json\n{"label": "bug"}\n```' }];
      const before = generateCalls().length;
      expect(await execute({ prompt: 'prompts/preamble.njk', outputSchema: 'schemas/triage.json' })).toMatchObject({ resultType: 'generic', data: { label: 'bug' } });
      const [first, second] = generateCalls().slice(before);
      expect(first).toMatchObject({ responseSchema: { name: 'triage', schema: { required: ['label'] } } });
      expect((second!['messages'] as unknown[]).slice(1)).toEqual([
        { role: 'assistant', content: 'a bug, I think' },
        { role: 'user', content: expect.stringContaining('the answer is not JSON') },
      ]);
    });

    it('answers 502 UHLP_LLM_OUTPUT_INVALID with the errors after the last attempt', async () => {
      answers = [{ text: '{"label":"feature"}' }, { text: '{"label":"feature"}' }];
      expect(await execute({ prompt: 'prompts/preamble.njk', outputSchema: 'schemas/triage.json', maxAttempts: 2 })).toMatchObject({
        resultType: 'error',
        data: { code: 'UHLP_LLM_OUTPUT_INVALID', status: 502, details: { attempts: 2, errors: [expect.stringContaining('/label')] } },
      });
    });

    it('runs tool calls through MCP with a capability refusal in the middle, and the model goes on', async () => {
      answers = [
        { text: null, toolCalls: [{ id: 'c1', name: 'core_kv_get', arguments: '{"key":"secret:x"}' }] },
        { text: null, toolCalls: [{ id: 'c2', name: 'core_kv_get', arguments: '{"key":"ctr:a"}' }] },
        { text: 'the counter is 41' },
      ];
      const before = generateCalls().length;
      expect(await execute({ prompt: 'prompts/preamble.njk', tools: ['core.kv.get'] })).toMatchObject({ resultType: 'generic', data: { text: 'the counter is 41' } });
      const calls = generateCalls().slice(before);
      expect(calls[0]!['tools']).toEqual([{ name: 'core_kv_get', description: 'Reads a key.', parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] } }]);
      expect(calls[2]!['messages']).toEqual(
        expect.arrayContaining([
          { role: 'tool', toolCallId: 'c1', content: expect.stringContaining('"code":"UHLP_CAPABILITY_DENIED"') },
          { role: 'tool', toolCallId: 'c2', content: '{"value":41}' },
        ]),
      );
    });

    it('stops a tool loop at maxToolCalls: 502 UHLP_LLM_TOOL_LOOP_LIMIT', async () => {
      answers = Array.from({ length: 3 }, (_, i) => ({ text: null, toolCalls: [{ id: `l${i}`, name: 'core_kv_get', arguments: '{"key":"ctr:a"}' }] }));
      expect(await execute({ prompt: 'prompts/preamble.njk', tools: ['core.kv.get'], maxToolCalls: 2 })).toMatchObject({
        resultType: 'error',
        data: { code: 'UHLP_LLM_TOOL_LOOP_LIMIT', status: 502 },
      });
    });

    it('answers httpResponse with the output as the HTTP answer', async () => {
      answers = [{ text: '{"statusCode": 202, "headers": {"x-triage": "queued"}, "body": {"queued": true}}' }];
      expect(await execute({ prompt: 'prompts/preamble.njk', outputSchema: RESPONSE_SCHEMA, respond: 'httpResponse' })).toMatchObject({
        resultType: 'httpResponse',
        data: { statusCode: 202, headers: { 'x-triage': 'queued', 'content-type': 'application/json; charset=utf-8' }, body: '{"queued":true}' },
      });
    });

    it('prepends the prompt header', async () => {
      answers = [{ text: 'ok' }];
      const before = generateCalls().length;
      await execute({ prompt: 'prompts/preamble.njk', header: true }, { headers: { 'x-uhlp-work-order': 'WO-9' } });
      const user = (generateCalls()[before]!['messages'] as Array<{ content: string }>)[0]!.content;
      const bodyHash = `sha256:${createHash('sha256').update('{"title":"it crashes"}').digest('hex')}`;
      expect(user).toMatch(/^\[uhlp prompt header\]\nsession_id: "SES-1-abc"\nturn_number: 3\ndeclared_inputs:\n {2}- name: "body"\n/);
      expect(user).toContain(`hash: "${bodyHash}"`);
      expect(user).toContain('declared_outputs:\n  - path: "output/triage.json"\n    role: "result"\n');
      expect(user).toMatch(/context_as_of: "\d{4}-\d\d-\d\dT[\d:.]+Z"\nwork_order_id: "WO-9"\n\[end of prompt header\]\nRead the ticket\.$/);
    });

    it("passes core.llm.generate's errors through with their details: the budget's retryAfterSeconds", async () => {
      answers = [];
      expect(await execute({ prompt: 'prompts/preamble.njk' })).toMatchObject({
        resultType: 'error',
        data: { code: 'UHLP_LLM_BUDGET_EXCEEDED', status: 429, details: { retryAfterSeconds: 5400 } },
      });
    });

    it('answers 500 UHLP_PROMPT_TEMPLATE_ERROR naming the file and line, and 500 UHLP_PROMPT_TEMPLATE_INVALID for a template reaching for process', async () => {
      expect(await execute({ prompt: 'prompts/broken.njk' })).toMatchObject({
        resultType: 'error',
        data: { code: 'UHLP_PROMPT_TEMPLATE_ERROR', status: 500, details: { file: 'prompts/broken.njk', line: 2, cause: expect.stringMatching(/^template not found: prompts\/missing\.njk/) } },
      });
      expect(await execute({ prompt: 'prompts/hostile.njk' })).toMatchObject({
        resultType: 'error',
        data: { code: 'UHLP_PROMPT_TEMPLATE_INVALID', status: 500, details: { file: 'prompts/hostile.njk', line: 1, column: 10, cause: 'the attribute "constructor" is not allowed in templates' } },
      });
      // The sandbox is still serving.
      answers = [{ text: 'still here' }];
      expect(await execute({ prompt: 'prompts/preamble.njk' })).toMatchObject({ resultType: 'generic', data: { text: 'still here' } });
    });
  });
}
