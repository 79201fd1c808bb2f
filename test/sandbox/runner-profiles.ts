/**
 * The runners the driver suite runs the /execute contract against: what each
 * needs next to its sandbox (a definitions root, an MCP endpoint) and how to
 * ask it for the suite's behaviours. The jit-runner and the python runner run
 * scripts from the definitions mount (behaviours.mjs, behaviours.py); the
 * llm-orchestrator renders templates and asks a model, both through a fake MCP
 * server on the socket drivers mount.
 */
import type { ExecuteRequest } from '../../src/contract/execute-contract.js';
import type { RunnerKind } from '../../src/images/runner-files.js';
import { FAKE_MCP_TOKEN, startFakeMcpServer } from '../helpers/fake-mcp-server.js';
import { executeBody, makeSuiteDefinitions, SUITE_REVISION } from './driver-suite.js';

/** hello: answers with the name it was given; slow: takes 300 ms; exit: ends the runner; hog: fills its memory. */
export type SuiteBehaviour = 'hello' | 'slow' | 'exit' | 'hog';

export interface RunnerSetup {
  readonly definitionsRoot: string;
  readonly mcpSocket?: string;
  body(requestId: string, behaviour: SuiteBehaviour, name?: string): string;
  /** What `data` of a hello answer holds (at least). */
  hello(name: string): Record<string, unknown>;
  /** The runner's pid in an answer, where the runner tells it. */
  pidOf?(data: unknown): number;
  close(): Promise<void>;
}

export interface RunnerProfile {
  readonly runner: RunnerKind;
  /** The behaviours a request can make this runner show. */
  readonly behaviours: ReadonlySet<SuiteBehaviour>;
  prepare(): Promise<RunnerSetup>;
}

export const JIT_PROFILE: RunnerProfile = {
  runner: 'jit',
  behaviours: new Set(['hello', 'slow', 'exit', 'hog']),
  async prepare() {
    return {
      definitionsRoot: makeSuiteDefinitions(),
      body: executeBody,
      hello: (name) => ({ hello: name }),
      pidOf: (data) => (data as { pid: number }).pid,
      close: async () => undefined,
    };
  },
};

/** The suite's Python script, beside the JavaScript one. */
export const PYTHON_SUITE_SCRIPT = 'scripts/behaviours.py';

/** The python runner: the same behaviours, as a Python script. */
export const PYTHON_PROFILE: RunnerProfile = {
  runner: 'python',
  behaviours: new Set(['hello', 'slow', 'exit', 'hog']),
  async prepare() {
    return {
      definitionsRoot: makeSuiteDefinitions(),
      body: (requestId, behaviour, name) => executeBody(requestId, behaviour, name, PYTHON_SUITE_SCRIPT),
      hello: (name) => ({ hello: name }),
      pidOf: (data) => (data as { pid: number }).pid,
      close: async () => undefined,
    };
  },
};


const HELLO_SCHEMA = { type: 'object', properties: { hello: { type: 'string' } }, required: ['hello'], additionalProperties: false };

/** The llm-orchestrator, with a model that greets the name in the prompt (after 300 ms when asked to be slow). */
export const LLM_PROFILE: RunnerProfile = {
  runner: 'llm',
  // A template cannot end the orchestrator or fill its memory: that is the point of its sandbox.
  behaviours: new Set(['hello', 'slow']),
  async prepare() {
    const mcp = await startFakeMcpServer({
      revision: SUITE_REVISION,
      files: { 'prompts/hello.njk': 'Say hello to <{{ body.name }}>.', 'prompts/slow.njk': 'Slowly, {% include "prompts/hello.njk" %}' },
      tools: {
        'core.llm.generate': async (args) => {
          const messages = args['messages'] as Array<{ role: string; content: string }>;
          const prompt = messages[messages.length - 1]!.content;
          if (prompt.startsWith('Slowly')) await new Promise((resolve) => setTimeout(resolve, 300));
          const name = /<(.*)>/.exec(prompt)?.[1] ?? '';
          return { text: JSON.stringify({ hello: name }), toolCalls: [], finishReason: 'stop', model: 'scripted', usage: { prompt: prompt.length, completion: 5 }, cached: false };
        },
      },
    });
    return {
      definitionsRoot: makeSuiteDefinitions(),
      mcpSocket: mcp.socketPath,
      body: (requestId, behaviour, name = 'x') => JSON.stringify(llmExecuteRequest(requestId, behaviour === 'slow' ? 'prompts/slow.njk' : 'prompts/hello.njk', name)),
      hello: (name) => ({ hello: name }),
      close: () => mcp.close(),
    };
  },
};

export function llmExecuteRequest(requestId: string, prompt: string, name: string, llm: Record<string, unknown> = { outputSchema: HELLO_SCHEMA }): ExecuteRequest {
  return {
    requestId,
    requestData: { source: 'trigger', triggerDetails: { sourceAppId: 'test', triggerEvent: 'suite', payload: { name } } },
    context: {
      appId: 'suite',
      componentId: 'greeter',
      // Any host: the runner sends MCP requests to the mounted socket.
      mcp_endpoint: 'http://core/mcp',
      mcp_token: FAKE_MCP_TOKEN,
      stateConfig: { type: 'mcp_tool' },
      configuration: {},
      applicationInfo: { deploymentMode: 'development' },
      taskDetails: { handler: 'LLM', revision: SUITE_REVISION, llm: { prompt, ...llm } },
    },
  };
}

export const RUNNER_PROFILES: readonly RunnerProfile[] = [JIT_PROFILE, LLM_PROFILE, PYTHON_PROFILE];
