/**
 * Workflow runs started by the official MCP client (SDK v2, 2026-07-28) on the
 * driver given with Redis state: `core.workflow.start` answered as a task
 * (the io.modelcontextprotocol/tasks extension) that is polled, cancelled
 * (the run ends cancelled, the model call cut) or completed, an approval
 * answered through tasks/update and through input_required (the client's own
 * multi round-trip driver and elicitation handler), and hostile calls: an
 * unknown task, another app's task, malformed answers, a client that did not
 * declare the extension, a cancel of an ended task.
 *
 * The SDK's client (2.4.0) drives tasks/get, tasks/update and tasks/cancel as
 * extension methods, but has no decoder for a `resultType: "task"` answer to
 * tools/call (it refuses it as an unsupported result type): the task the call
 * created is read from the wire through the transport's own fetch.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, cpSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastPrompt, reply, startOpenAiTestServer, type OpenAiTestServer } from './openai-test-server.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from './redis-url.js';
import { copyFixture, startUhlpDev, UHLP_BIN, type UhlpProcess } from './uhlp-process.js';
import { waitFor } from './wait-for.js';
import type { DriverSuiteOptions } from './driver-suite-options.js';

const run = promisify(execFile);
const TASKS = 'io.modelcontextprotocol/tasks';

/** Any JSON result, as a Standard Schema the client's request() takes for an extension method. */
const anyResult = {
  '~standard': { version: 1, vendor: 'uhlp-test', validate: (value: unknown) => ({ value }) },
} as const;

type Json = Record<string, any>;

export type McpRunTasksSuiteOptions = DriverSuiteOptions;

export function describeMcpRunTasks(options: McpRunTasksSuiteOptions): void {
  const startTimeoutMs = options.startTimeoutMs ?? 120_000;
  describe(`workflow runs as MCP tasks (official client, ${options.driver} driver, Redis state)`, () => {
    let llm: OpenAiTestServer;
    let core: UhlpProcess;
    const clients: Client[] = [];

    beforeAll(async () => {
      await options.before?.();
      llm = await startOpenAiTestServer();
      // A step whose text says "hang" never gets its answer: its run is cut mid-call by a cancel.
      llm.handle((request) => (lastPrompt(request).includes('hang') ? reply.hang() : reply.text(`done: ${lastPrompt(request)}`)));
      const dir = copyFixture('workflow-e2e');
      // A second app, for a token that must not see the first app's tasks.
      const other = path.join(dir, 'apps', 'other');
      mkdirSync(other, { recursive: true });
      cpSync(path.join(dir, 'apps', 'flow', 'scripts'), path.join(other, 'scripts'), { recursive: true });
      writeFileSync(
        path.join(other, 'app.yaml'),
        [
          'apiVersion: uhlp.dev/v1alpha1',
          'kind: AppDefinition',
          'metadata: { name: other }',
          'spec:',
          '  pools:',
          '    - { name: main, minWarm: 0, maxSize: 1, limits: { timeoutMs: 5000 } }',
          '  components:',
          '    - { id: noop, handler: JIT, pool: main, jit: { script: scripts/steps.mjs, function: noop } }',
          '',
        ].join('\n'),
      );
      const env = { UHLP_LLM_BASE_URL: llm.baseUrl, UHLP_LLM_MAX_RETRIES: '0', UHLP_STATE: TEST_REDIS_URL, UHLP_STATE_PREFIX: uniqueKeyPrefix('mcp-tasks') };
      core = await startUhlpDev(dir, ['--driver', options.driver], startTimeoutMs, undefined, env);
    }, startTimeoutMs + 30_000);

    afterAll(async () => {
      await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
      await core?.stop();
      await llm?.close();
    });

    /** A 2026-07-28 client of `appId`'s dev token; `tasks` declares the extension. The last JSON answer it got is kept. */
    async function connect(appId: string, options: { tasks: boolean; elicitation?: (message: string) => Json }): Promise<{ client: Client; lastAnswer: () => Json | undefined }> {
      const { stdout } = await run(process.execPath, [UHLP_BIN, 'mcp', 'token', appId, '--url', core.operatorUrl]);
      const [url, token] = stdout.trimEnd().split('\n').map((line) => line.slice(line.indexOf('=') + 1));
      let last: Json | undefined;
      const capturing = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
        const response = await fetch(input, init);
        if ((response.headers.get('content-type') ?? '').includes('application/json')) last = (await response.clone().json()) as Json;
        return response;
      };
      const client = new Client(
        { name: 'uhlp-test', version: '1.0.0' },
        {
          versionNegotiation: { mode: { pin: '2026-07-28' } },
          capabilities: {
            ...(options.tasks ? { extensions: { [TASKS]: {} } } : {}),
            ...(options.elicitation !== undefined ? { elicitation: { form: {} } } : {}),
          },
        },
      );
      if (options.elicitation !== undefined) {
        const answer = options.elicitation;
        client.setRequestHandler('elicitation/create', async (request) => answer(String((request.params as { message?: unknown }).message)) as never);
      }
      await client.connect(new StreamableHTTPClientTransport(new URL(url!), { fetch: capturing, requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
      clients.push(client);
      return { client, lastAnswer: () => last };
    }

    /** Starts `component` as a task; answers the CreateTaskResult as it came over the wire. */
    async function startTask(client: Client, lastAnswer: () => Json | undefined, component: string, input: unknown): Promise<Json> {
      // The SDK client refuses resultType "task" on tools/call (no decoder for it in 2.4.0): the answer is read from the wire.
      await expect(client.callTool({ name: 'core.workflow.start', arguments: { component, input } })).rejects.toThrow(/Unsupported result type 'task'|task/);
      const answer = lastAnswer();
      expect(answer?.['result']?.['resultType']).toBe('task');
      return answer!['result'] as Json;
    }

    const get = (client: Client, taskId: string): Promise<Json> => client.request({ method: 'tasks/get', params: { taskId } }, anyResult) as Promise<Json>;

    async function pollUntil(client: Client, taskId: string, statuses: readonly string[], what: string): Promise<Json> {
      let task: Json = {};
      await waitFor(
        async () => {
          task = await get(client, taskId);
          return statuses.includes(String(task['status']));
        },
        { timeoutMs: 60_000, what },
      );
      return task;
    }

    it('lists core.workflow.start to an outside client', async () => {
      const { client } = await connect('flow', { tasks: false });
      const tool = (await client.listTools()).tools.find((listed) => listed.name === 'core.workflow.start');
      expect(tool?.inputSchema).toMatchObject({ required: ['component'] });
    });

    it('starts a task, polls it working, and completes it with the run\'s result', async () => {
      const { client, lastAnswer } = await connect('flow', { tasks: true });
      const created = await startTask(client, lastAnswer, 'hanging', { text: 'finish me', one: '1' });
      expect(created).toMatchObject({ status: 'working', taskId: expect.stringMatching(/^RUN-/), pollIntervalMs: expect.any(Number), ttlMs: expect.any(Number) });
      const done = await pollUntil(client, created['taskId'], ['completed', 'cancelled'], 'the task to complete');
      expect(done['status']).toBe('completed');
      expect(done['result']['isError']).toBeUndefined();
      expect(JSON.stringify(done['result']['structuredContent'])).toContain('done: Step 1 of: finish me');
      // The run behind it, on the apps listener, is the same run.
      const runView = (await (await fetch(`${core.url}/_uhlp/runs/${created['taskId']}`)).json()) as Json;
      expect(runView['status']).toBe('completed');
    });

    it('cancels a task mid-model-call: the run ends cancelled by the MCP client and the provider sees its request closed', async () => {
      const { client, lastAnswer } = await connect('flow', { tasks: true });
      const created = await startTask(client, lastAnswer, 'hanging', { text: 'hang here', one: '1' });
      const taskId = created['taskId'] as string;
      await waitFor(async () => llm.requests.some((request) => lastPrompt(request).includes('hang here')), { timeoutMs: 30_000, what: 'the run to reach its model call' });
      expect((await get(client, taskId))['status']).toBe('working');
      const call = llm.requests.find((request) => lastPrompt(request).includes('hang here'))!;
      const ack = (await client.request({ method: 'tasks/cancel', params: { taskId } }, anyResult)) as Json;
      expect(ack).toBeDefined();
      const ended = await pollUntil(client, taskId, ['cancelled', 'completed'], 'the task to end');
      expect(ended['status']).toBe('cancelled');
      expect(ended['statusMessage']).toMatch(/\(mcp\)/);
      const runView = (await (await fetch(`${core.url}/_uhlp/runs/${taskId}`)).json()) as Json;
      expect(runView).toMatchObject({ status: 'cancelled', cancellation: { via: 'mcp' } });
      await waitFor(async () => call.disconnected, { timeoutMs: 5_000, what: "the provider's request to be closed" });
      // A cancel of a task that has ended: a stable JSON-RPC error.
      await expect(client.request({ method: 'tasks/cancel', params: { taskId } }, anyResult)).rejects.toMatchObject({ code: -32602, data: { code: 'UHLP_WORKFLOW_RUN_ENDED' } });
    });

    it('answers an approval of a task through tasks/update, and the run completes with its result', async () => {
      const { client, lastAnswer } = await connect('flow', { tasks: true });
      const created = await startTask(client, lastAnswer, 'granted', {});
      const taskId = created['taskId'] as string;
      const waiting = await pollUntil(client, taskId, ['input_required'], 'the task to wait for its approval');
      const [key, request] = Object.entries(waiting['inputRequests'] as Json)[0]!;
      expect(request).toMatchObject({ method: 'elicitation/create', params: { mode: 'form', message: 'Write the key?', requestedSchema: { required: ['approved'] } } });
      // Malformed answers: a stable error, and the run still waits.
      await expect(client.request({ method: 'tasks/update', params: { taskId, inputResponses: { [key]: { action: 'accept', content: { approved: 'yes' } } } } }, anyResult)).rejects.toMatchObject({
        code: -32602,
        data: { code: 'UHLP_WORKFLOW_DECISION_INVALID', field: `inputResponses.${key}` },
      });
      await expect(client.request({ method: 'tasks/update', params: { taskId, inputResponses: [] } }, anyResult)).rejects.toMatchObject({ code: -32602, data: { code: 'UHLP_WORKFLOW_DECISION_INVALID' } });
      // An answer to a key that is not outstanding is ignored.
      await client.request({ method: 'tasks/update', params: { taskId, inputResponses: { 'approval:nope:9': { action: 'accept', content: { approved: true } } } } }, anyResult);
      expect((await get(client, taskId))['status']).toBe('input_required');
      await client.request({ method: 'tasks/update', params: { taskId, inputResponses: { [key]: { action: 'accept', content: { approved: true, comment: 'go' } } } } }, anyResult);
      const done = await pollUntil(client, taskId, ['completed', 'cancelled'], 'the task to complete');
      expect(done).toMatchObject({ status: 'completed', result: { structuredContent: { ok: true } } });
      const runView = (await (await fetch(`${core.url}/_uhlp/runs/${taskId}`)).json()) as Json;
      expect(runView['approvals']['approve']).toMatchObject({ approved: true, comment: 'go', by: 'mcp:dev-client' });
    });

    it('asks a client without tasks for the approval as input_required, and its answer resumes the run to its result', async () => {
      const asked: string[] = [];
      const { client } = await connect('flow', {
        tasks: false,
        elicitation: (message) => {
          asked.push(message);
          return { action: 'accept', content: { approved: true } };
        },
      });
      const result = await client.callTool({ name: 'core.workflow.start', arguments: { component: 'granted', input: {} } });
      expect(asked).toEqual(['Write the key?']);
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({ ok: true });
    });

    it('a declined approval through input_required ends the run as the workflow says', async () => {
      const { client } = await connect('flow', { tasks: false, elicitation: () => ({ action: 'decline' }) });
      const result = await client.callTool({ name: 'core.workflow.start', arguments: { component: 'granted', input: {} } });
      const runId = (result._meta as Json | undefined)?.['dev.uhlp/runId'] as string;
      const runView = (await (await fetch(`${core.url}/_uhlp/runs/${runId}`)).json()) as Json;
      expect(runView['approvals']['approve']).toMatchObject({ approved: false, by: 'mcp:dev-client' });
      expect(['completed', 'failed']).toContain(runView['status']);
    });

    it('refuses hostile task calls with stable errors', async () => {
      const { client, lastAnswer } = await connect('flow', { tasks: true });
      const created = await startTask(client, lastAnswer, 'granted', {});
      const taskId = created['taskId'] as string;
      // An unknown task, a made-up id, a missing id.
      for (const bad of ['RUN-20260101T000000000Z-0000000000000000000A', '../../etc/passwd', 42]) {
        await expect(client.request({ method: 'tasks/get', params: { taskId: bad as string } }, anyResult)).rejects.toMatchObject({ code: -32602, data: { code: 'UHLP_MCP_TASK_NOT_FOUND' } });
      }
      // Another app's token does not see the task, whatever it asks.
      const { client: other } = await connect('other', { tasks: true });
      for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
        await expect(other.request({ method, params: { taskId, inputResponses: {} } }, anyResult)).rejects.toMatchObject({ code: -32602, data: { code: 'UHLP_MCP_TASK_NOT_FOUND' } });
      }
      expect((await get(client, taskId))['status']).not.toBe('cancelled');
      // Nor does it resume it through a retry naming the run as its requestState.
      const { client: otherPlain } = await connect('other', { tasks: false });
      const smuggled = (await otherPlain.request(
        { method: 'tools/call', params: { name: 'core.workflow.start', arguments: { component: 'granted' }, requestState: taskId, inputResponses: {} } },
        anyResult,
      )) as Json;
      expect(smuggled).toMatchObject({ isError: true, structuredContent: { code: 'UHLP_MCP_TASK_NOT_FOUND' } });
      // A client that did not declare the extension gets no task methods.
      const { client: plain } = await connect('flow', { tasks: false });
      await expect(plain.request({ method: 'tasks/get', params: { taskId } }, anyResult)).rejects.toMatchObject({ code: -32021 });
      // A component that is no workflow, and arguments that are not the tool's.
      const notWorkflow = await plain.callTool({ name: 'core.workflow.start', arguments: { component: 'noop' } });
      expect(notWorkflow).toMatchObject({ isError: true, structuredContent: { code: 'UHLP_MCP_INVALID_ARGUMENTS', details: { field: 'component' } } });
      const extra = await plain.callTool({ name: 'core.workflow.start', arguments: { component: 'granted', runId: taskId } });
      expect(extra).toMatchObject({ isError: true, structuredContent: { code: 'UHLP_MCP_INVALID_ARGUMENTS', details: { field: 'runId' } } });
      await client.request({ method: 'tasks/cancel', params: { taskId } }, anyResult);
      expect((await pollUntil(client, taskId, ['cancelled'], 'the paused task to be cancelled'))['status']).toBe('cancelled');
    });
  });
}
