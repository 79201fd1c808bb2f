/**
 * The driver suite's runners as pods run them: a pod shares no file system and no
 * socket with the host, so the fake MCP server listens on the node's bridge address
 * and serves the jit-runner's scripts too (`--definitions-via-mcp`), and every
 * request names that server as `mcp_endpoint`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ExecuteRequest } from '../../src/contract/execute-contract.js';
import { FAKE_MCP_TOKEN, startFakeMcpServer, type FakeToolHandler } from '../helpers/fake-mcp-server.js';
import { executeBody, makeSuiteDefinitions, SUITE_REVISION } from '../sandbox/driver-suite.js';
import { JIT_PROFILE, LLM_PROFILE, llmExecuteRequest, PYTHON_PROFILE, PYTHON_SUITE_SCRIPT, type RunnerProfile } from '../sandbox/runner-profiles.js';
import { NODE_GATEWAY } from './node-env.js';

const generate: FakeToolHandler = async (args) => {
  const messages = args['messages'] as Array<{ role: string; content: string }>;
  const prompt = messages[messages.length - 1]!.content;
  if (prompt.startsWith('Slowly')) await new Promise((resolve) => setTimeout(resolve, 300));
  const name = /<(.*)>/.exec(prompt)?.[1] ?? '';
  return { text: JSON.stringify({ hello: name }), toolCalls: [], finishReason: 'stop', model: 'scripted', usage: { prompt: prompt.length, completion: 5 }, cached: false };
};

function withEndpoint(body: string, url: string): string {
  const request = JSON.parse(body) as ExecuteRequest;
  request.context.mcp_endpoint = url;
  request.context.mcp_token = FAKE_MCP_TOKEN;
  return JSON.stringify(request);
}

export const POD_JIT_PROFILE: RunnerProfile = {
  runner: 'jit',
  behaviours: JIT_PROFILE.behaviours,
  async prepare() {
    const definitionsRoot = makeSuiteDefinitions();
    const script = readFileSync(path.join(definitionsRoot, SUITE_REVISION, 'scripts/behaviours.mjs'), 'utf8');
    const mcp = await startFakeMcpServer({ revision: SUITE_REVISION, files: { 'scripts/behaviours.mjs': script }, tcpHost: NODE_GATEWAY });
    return {
      definitionsRoot,
      body: (requestId, behaviour, name) => withEndpoint(executeBody(requestId, behaviour, name), mcp.url),
      hello: (name) => ({ hello: name }),
      pidOf: (data) => (data as { pid: number }).pid,
      close: () => mcp.close(),
    };
  },
};

/** The python runner in a pod: its script read through MCP as the jit-runner's is. */
export const POD_PYTHON_PROFILE: RunnerProfile = {
  runner: 'python',
  behaviours: PYTHON_PROFILE.behaviours,
  async prepare() {
    const definitionsRoot = makeSuiteDefinitions();
    const script = readFileSync(path.join(definitionsRoot, SUITE_REVISION, PYTHON_SUITE_SCRIPT), 'utf8');
    const mcp = await startFakeMcpServer({ revision: SUITE_REVISION, files: { [PYTHON_SUITE_SCRIPT]: script }, tcpHost: NODE_GATEWAY });
    return {
      definitionsRoot,
      body: (requestId, behaviour, name) => withEndpoint(executeBody(requestId, behaviour, name, PYTHON_SUITE_SCRIPT), mcp.url),
      hello: (name) => ({ hello: name }),
      pidOf: (data) => (data as { pid: number }).pid,
      close: () => mcp.close(),
    };
  },
};

export const POD_LLM_PROFILE: RunnerProfile = {
  runner: 'llm',
  behaviours: LLM_PROFILE.behaviours,
  async prepare() {
    const mcp = await startFakeMcpServer({
      revision: SUITE_REVISION,
      files: { 'prompts/hello.njk': 'Say hello to <{{ body.name }}>.', 'prompts/slow.njk': 'Slowly, {% include "prompts/hello.njk" %}' },
      tools: { 'core.llm.generate': generate },
      tcpHost: NODE_GATEWAY,
    });
    return {
      definitionsRoot: makeSuiteDefinitions(),
      body: (requestId, behaviour, name = 'x') => {
        const request = llmExecuteRequest(requestId, behaviour === 'slow' ? 'prompts/slow.njk' : 'prompts/hello.njk', name);
        return withEndpoint(JSON.stringify(request), mcp.url);
      },
      hello: (name) => ({ hello: name }),
      close: () => mcp.close(),
    };
  },
};

export const POD_RUNNER_PROFILES: readonly RunnerProfile[] = [POD_JIT_PROFILE, POD_LLM_PROFILE, POD_PYTHON_PROFILE];
