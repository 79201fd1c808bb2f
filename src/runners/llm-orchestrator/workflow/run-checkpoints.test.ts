import { describe, expect, it } from 'vitest';
import { FakeTools } from '../../../../test/helpers/fake-tools.js';
import { freshState, workflowOf } from '../../../../test/helpers/workflow-fakes.js';
import type { SimulationStep } from '../../../contract/workflow/run-view.js';
import type { StreamPacket } from '../../../contract/workflow/stream-packets.js';
import { ToolCallError } from '../../kit/tools-client.js';
import { CHECKPOINT_TOOL, INVOKE_TOOL } from './engine-tools.js';
import { RunCheckpoints } from './run-checkpoints.js';
import type { RunState } from './run-state.js';

const workflow = workflowOf(`
start: a
nodes:
  a: { type: agent, prompt: p.njk, next: j }
  j: { type: jit, component: c, next: t }
  t: { type: tool, tool: core.log, next: r }
  r: { type: router, input_key: x, routes: {}, default_route: ok }
  ok: { type: approval, prompt: ok?, next: e }
  e: { type: end }
`, { c: { handler: 'JIT' } });
const step = (index: number): SimulationStep => ({ index, at: '', workflowId: 'flow', stepId: 's', node: 's', type: 'tool', status: 'completed', thought: '', action: {}, observation: null, snapshot: null, durationMs: 0 });
const packet: StreamPacket = { type: 'STREAM_END', stream_id: 'default' };

function checkpoints(tools = new FakeTools({ tools: { [CHECKPOINT_TOOL]: () => ({ ok: true }) } })): { tools: FakeTools; state: RunState; run: RunCheckpoints } {
  const state = structuredClone(freshState(['a'], { n: 1 })) as RunState;
  return { tools, state, run: new RunCheckpoints(tools, state) };
}

describe("the run's checkpoints", () => {
  it('keeps deferred steps for the next call, which takes them with a copy of the state', () => {
    const { state, run } = checkpoints();
    expect(run.take()).toBeUndefined();
    run.defer([step(0)], [packet]);
    run.defer([step(1)], []);
    const taken = run.take();
    state.blackboard['n'] = 2;
    expect(taken).toEqual({ state: { ...freshState(['a'], { n: 1 }) }, steps: [step(0), step(1)], emit: [packet] });
    expect(run.take()).toBeUndefined();
  });

  it.each<[string, string[], boolean]>([
    ['an agent', ['a'], true],
    ['a tool', ['t'], true],
    ['a wave of two, even of deferring kinds', ['r', 'e'], true],
    ['a JIT step, whose call carries it', ['j'], false],
    ['a router', ['r'], false],
    ['an approval', ['ok'], false],
    ['an end', ['e'], false],
  ])('sends the pending checkpoint on its own before %s: %s', async (_name, ids, sent) => {
    const { tools, run } = checkpoints();
    run.defer([step(0)], []);
    await run.beforeWave(ids.map((id) => workflow.nodes[id]!));
    expect(tools.callsOf(CHECKPOINT_TOOL)).toHaveLength(sent ? 1 : 0);
  });

  it('sends nothing before a wave when nothing is pending', async () => {
    const { tools, run } = checkpoints();
    await run.beforeWave([workflow.nodes['a']!]);
    expect(tools.calls).toEqual([]);
  });

  it("sends the pending steps before a checkpoint's own, with the run's ending", async () => {
    const { tools, run } = checkpoints();
    run.defer([step(0)], [packet]);
    await run.checkpoint([step(1)], [], { status: 'completed', result: { ok: 1 } });
    expect(tools.callsOf(CHECKPOINT_TOOL)).toEqual([{ state: freshState(['a'], { n: 1 }), steps: [step(0), step(1)], status: 'completed', result: { ok: 1 }, emit: [packet] }]);
  });

  it('fails the run (timed_out for a timeout) with its error and answers the error result', async () => {
    const { tools, run } = checkpoints();
    const answer = await run.fail({ code: 'UHLP_WORKFLOW_TIMEOUT', message: 'late', status: 504, details: { runId: 'RUN-1' } });
    expect(tools.callsOf(CHECKPOINT_TOOL)[0]).toMatchObject({ status: 'timed_out', error: { code: 'UHLP_WORKFLOW_TIMEOUT' } });
    expect(answer).toEqual({ resultType: 'error', data: { code: 'UHLP_WORKFLOW_TIMEOUT', message: 'late', status: 504, details: { runId: 'RUN-1' } } });
    await run.fail({ code: 'UHLP_INTERNAL', message: 'x', status: 500 });
    expect(tools.callsOf(CHECKPOINT_TOOL)[1]).toMatchObject({ status: 'failed' });
  });

  it('fails the run from here when a checkpoint is over the endpoint body limit, keeping the state of the last one', async () => {
    const tools = new FakeTools({
      tools: {
        [INVOKE_TOOL]: () => Promise.reject(new ToolCallError('UHLP_BODY_TOO_LARGE', 'core.component.invoke: over 1 MiB', 413, { limitBytes: 1048576 })),
        [CHECKPOINT_TOOL]: () => ({ ok: true }),
      },
    });
    const { run } = checkpoints(tools);
    await expect(run.send(INVOKE_TOOL, { checkpoint: {} })).rejects.toMatchObject({ code: 'UHLP_WORKFLOW_STATE_TOO_LARGE', statusCode: 500, details: { limitBytes: 1048576 } });
    expect(tools.callsOf(CHECKPOINT_TOOL)).toEqual([
      { steps: [], status: 'failed', error: { code: 'UHLP_WORKFLOW_STATE_TOO_LARGE', message: expect.stringMatching(/too large for the core to read/), status: 500, details: { limitBytes: 1048576 } } },
    ]);
    // The run is over on the core's side: failing it again sends nothing.
    await run.fail({ code: 'UHLP_WORKFLOW_STATE_TOO_LARGE', message: 'x', status: 500 });
    expect(tools.callsOf(CHECKPOINT_TOOL)).toHaveLength(1);
  });

  it('sends nothing more once the core failed the run for its size', async () => {
    const refusal = new ToolCallError('UHLP_WORKFLOW_STATE_TOO_LARGE', 'over the cap', 500);
    const tools = new FakeTools({ tools: { [CHECKPOINT_TOOL]: () => Promise.reject(refusal) } });
    const { run } = checkpoints(tools);
    await expect(run.checkpoint([step(0)])).rejects.toBe(refusal);
    await run.fail({ code: 'UHLP_WORKFLOW_STATE_TOO_LARGE', message: 'over the cap', status: 500 });
    expect(tools.callsOf(CHECKPOINT_TOOL)).toHaveLength(1);
  });

  it("passes other refusals through and goes on checkpointing", async () => {
    const refusal = new ToolCallError('UHLP_WORKFLOW_RUN_CONFLICT', 'taken over', 409);
    const tools = new FakeTools({ tools: { [CHECKPOINT_TOOL]: () => Promise.reject(refusal) } });
    const { run } = checkpoints(tools);
    await expect(run.checkpoint([])).rejects.toBe(refusal);
    await run.fail({ code: 'UHLP_INTERNAL', message: 'x', status: 500 }).catch(() => undefined);
    expect(tools.callsOf(CHECKPOINT_TOOL)).toHaveLength(2);
  });
});
