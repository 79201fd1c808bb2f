import { describe, expect, it } from 'vitest';
import { FakeTools } from '../../../../test/helpers/fake-tools.js';
import { nodeContext, workflowOf } from '../../../../test/helpers/workflow-fakes.js';
import { ToolCallError } from '../../kit/tools-client.js';
import { runWithRetries } from './node-retries.js';

const workflow = workflowOf(`
policy: { max_retries: 2, retry_backoff_ms: 100 }
start: call
nodes:
  call: { type: tool, tool: core.kv.get, args: { key: a }, next: done }
  once: { type: tool, tool: core.kv.get, max_retries: 0, next: done }
  guarded: { type: tool, tool: core.kv.get, requirements: [{ variable: input.text, operator: exists, error_message: text is required }], next: done }
  done: { type: end }
`);

/** core.kv.get failing with each of `failures` in turn, then answering. */
function flaky(...failures: ToolCallError[]): FakeTools {
  return new FakeTools({ tools: { 'core.kv.get': () => (failures.length > 0 ? Promise.reject(failures.shift()!) : { value: 1 }) } });
}
const unavailable = (): ToolCallError => new ToolCallError('UHLP_STATE_UNAVAILABLE', 'redis is down', 503);

function recordingSleep(): { waits: number[]; sleep: (ms: number) => Promise<void> } {
  const waits: number[] = [];
  return { waits, sleep: async (ms) => void waits.push(ms) };
}

describe('a node under the retry policy', () => {
  it('runs once when it succeeds', async () => {
    const tools = flaky();
    const { waits, sleep } = recordingSleep();
    const ctx = nodeContext({ workflow, tools });
    await expect(runWithRetries('call', ctx, sleep)).resolves.toMatchObject({ next: ['done'] });
    expect(tools.callsOf('core.kv.get')).toHaveLength(1);
    expect(waits).toEqual([]);
    expect(ctx.state.retries).toEqual({});
  });

  it("retries a failure that may pass (429, 5xx) up to the policy's max_retries, with a doubling backoff, and counts them in the state", async () => {
    const tools = flaky(unavailable(), new ToolCallError('UHLP_LLM_RATE_LIMITED', 'slow down', 429));
    const { waits, sleep } = recordingSleep();
    const ctx = nodeContext({ workflow, tools });
    await expect(runWithRetries('call', ctx, sleep)).resolves.toMatchObject({ output: { value: 1 } });
    expect(tools.callsOf('core.kv.get')).toHaveLength(3);
    expect(ctx.state.retries).toEqual({ call: 2 });
    // Equal jitter: half the ceiling fixed, half random; the ceiling doubles per retry.
    expect(waits).toHaveLength(2);
    expect(waits[0]).toBeGreaterThanOrEqual(50);
    expect(waits[0]).toBeLessThanOrEqual(100);
    expect(waits[1]).toBeGreaterThanOrEqual(100);
    expect(waits[1]).toBeLessThanOrEqual(200);
  });

  it('fails with the last failure once the retries are spent, counting retries a resumed run already made', async () => {
    const last = unavailable();
    const { waits, sleep } = recordingSleep();
    const ctx = nodeContext({ workflow, tools: flaky(unavailable(), last), state: { retries: { call: 1 } } });
    await expect(runWithRetries('call', ctx, sleep)).rejects.toBe(last);
    expect(waits).toHaveLength(1);
    expect(ctx.state.retries).toEqual({ call: 2 });
  });

  it("takes the node's own max_retries over the policy's", async () => {
    const failure = unavailable();
    const { waits, sleep } = recordingSleep();
    await expect(runWithRetries('once', nodeContext({ workflow, tools: flaky(failure) }), sleep)).rejects.toBe(failure);
    expect(waits).toEqual([]);
  });

  it.each([
    ['a client error', new ToolCallError('UHLP_MCP_INVALID_ARGUMENTS', 'bad', 400)],
    ['a capability refusal', new ToolCallError('UHLP_CAPABILITY_DENIED', 'denied', 403)],
    ['a final 5xx code', new ToolCallError('UHLP_WORKFLOW_STATE_TOO_LARGE', 'too large', 500)],
    ['the run being taken over', new ToolCallError('UHLP_WORKFLOW_RUN_CONFLICT', 'taken', 409)],
  ])('does not retry %s', async (_name, failure) => {
    const { waits, sleep } = recordingSleep();
    await expect(runWithRetries('call', nodeContext({ workflow, tools: flaky(failure) }), sleep)).rejects.toBe(failure);
    expect(waits).toEqual([]);
  });

  it("checks the node's requirements first: 422 UHLP_WORKFLOW_PREFLIGHT_FAILED naming the node, and the node does not run", async () => {
    const tools = flaky();
    const failure = runWithRetries('guarded', nodeContext({ workflow, tools, blackboard: { input: {} } }), recordingSleep().sleep);
    await expect(failure).rejects.toMatchObject({ code: 'UHLP_WORKFLOW_PREFLIGHT_FAILED', statusCode: 422, message: 'text is required', details: { variable: 'input.text', operator: 'exists', node: 'guarded' } });
    expect(tools.calls).toEqual([]);
  });

  it("does not take an evaluator's max_retries (its judgements) as its retries", async () => {
    const judged = workflowOf(
      `
start: judge
nodes:
  judge: { type: evaluator, evaluator_agent_ref: critic, target_variable: draft, pass_threshold: 0.5, pass_route: done, fail_route: done, max_retries: 5 }
  done: { type: end }
`,
      { critic: { handler: 'LLM' } },
    );
    const failure = new ToolCallError('UHLP_LLM_UPSTREAM_ERROR', 'down', 502);
    const tools = new FakeTools({ files: { 'prompts/judge.njk': 'judge' } });
    const { waits, sleep } = recordingSleep();
    const ctx = nodeContext({ workflow: judged, tools, components: { critic: { handler: 'LLM', llm: { prompt: 'prompts/judge.njk' } } } });
    await expect(runWithRetries('judge', { ...ctx, generate: () => Promise.reject(failure) }, sleep)).rejects.toBe(failure);
    expect(waits).toEqual([]);
  });
});
