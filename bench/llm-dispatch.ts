/**
 * An LLM component through the core (ingress, pool, the llm-orchestrator in its
 * sandbox rendering a template read through MCP, core.llm.generate through the
 * core's OpenAI-compatible provider) beside the same completion sent straight to
 * the OpenAI-compatible server, in one run: what the orchestration adds to the
 * provider's own time. The server answers at once, so the difference is ours.
 * The floor (path `forwarder`): a bare relay process that takes the same GET and
 * sends the same completion (bench/lib/bare-llm-relay.ts); its CPU per request is
 * what the turn's own work costs with nothing of uhlp in between. The floor of
 * the design (path `hops`): the same turn's hops between bare processes
 * (bench/lib/bare-stream-relay.ts): the client's GET to a front in the core's
 * place, an /execute to a brain in the orchestrator's, its call back to the
 * front for the completion, the provider; CPU read from the front and brain.
 */
import { reply, startOpenAiTestServer, type OpenAiTestServer } from '../test/helpers/openai-test-server.js';
import { startUhlpDev } from '../test/helpers/uhlp-process.js';
import type { BareChild } from './lib/bare-child.js';
import { startBareLlmRelay } from './lib/bare-llm-relay.js';
import { startBareStreamRelay } from './lib/bare-stream-relay.js';
import { writeBenchApp } from './lib/bench-app.js';
import { loadThroughCore } from './lib/dispatch-load.js';
import { measureDispatch, type DispatchRow, type DispatchShape, type LoadResult } from './lib/load.js';
import { nativeLoad } from './lib/native-load.js';

/** One connection on one sandbox, and 16 on two sandboxes of 8 (one per core of the 2-core machine). */
export const LLM_SHAPES: readonly DispatchShape[] = [
  { connections: 1, sandboxes: 1, concurrency: 1 },
  { connections: 16, sandboxes: 2, concurrency: 8 },
];

export const ANSWER = 'Hello from the model.';

export function llmApp(shape: DispatchShape): string {
  return writeBenchApp(
    `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: bench }
spec:
  pools: [{ name: brain, runner: llm, minWarm: ${shape.sandboxes}, maxSize: ${shape.sandboxes}, concurrency: ${shape.concurrency}, maxUses: 100000000, limits: { timeoutMs: 5000 } }]
  components:
    - { id: greet, handler: LLM, pool: brain, llm: { prompt: prompts/greet.njk, maxTokens: 32 } }
  routes:
    - { http: { method: GET, path: /greet/:name }, component: greet }
  capabilities:
    llm: { models: [small], maxTokens: 64 }
`,
    { 'prompts/greet.njk': 'Say hello to {{ params.name }}.' },
  );
}

async function throughCore(llm: OpenAiTestServer, shape: DispatchShape, durationMs: number): Promise<LoadResult> {
  const core = await startUhlpDev(llmApp(shape), ['--log-level', 'error'], 60_000, undefined, { UHLP_LLM_BASE_URL: llm.baseUrl });
  try {
    return await loadThroughCore(core.url, '/bench/greet/{{id}}', shape.connections, durationMs, core.child.pid);
  } finally {
    await core.stop();
  }
}

/**
 * A floor: the same GET answered by bare processes, `startBareLlmRelay` (one hop, the turn's own work)
 * or `startBareStreamRelay` (the same hops as the core's path).
 */
async function throughBare(start: (baseUrl: string) => Promise<BareChild>, llm: OpenAiTestServer, shape: DispatchShape, durationMs: number): Promise<LoadResult> {
  const bare = await start(llm.baseUrl);
  try {
    return await loadThroughCore(bare.url, '/greet/{{id}}', shape.connections, durationMs, bare.pid);
  } finally {
    await bare.close();
  }
}

/** The request the orchestrator makes for the same component, sent straight to the server. */
function direct(llm: OpenAiTestServer, shape: DispatchShape, durationMs: number): Promise<LoadResult> {
  const { hostname, port } = new URL(llm.baseUrl);
  return nativeLoad({
    targets: [`tcp:${hostname}:${port}`],
    connections: shape.connections,
    method: 'POST',
    path: '/v1/chat/completions',
    headers: ['content-type: application/json'],
    body: JSON.stringify({ model: 'small', messages: [{ role: 'user', content: 'Say hello to {{id}}.' }], max_tokens: 32 }),
    durationMs,
  });
}

export async function benchLlmDispatch(durationMs: number, rounds: number): Promise<DispatchRow[]> {
  // Every request answered at once and not recorded: the server's own time is the floor.
  const llm = await startOpenAiTestServer({ record: false });
  llm.handle(() => reply.text(ANSWER, { usage: { prompt: 12, completion: 6 } }));
  try {
    return await measureDispatch({
        direct: (shape) => direct(llm, shape, durationMs),
        forwarder: (shape) => throughBare(startBareLlmRelay, llm, shape, durationMs),
        hops: (shape) => throughBare(startBareStreamRelay, llm, shape, durationMs),
        core: (shape) => throughCore(llm, shape, durationMs),
      }, rounds, LLM_SHAPES);
  } finally {
    await llm.close();
  }
}
