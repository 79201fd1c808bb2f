import { describe, expect, it } from 'vitest';
import { FakeClock, freshState, workflowOf } from '../../../../test/helpers/workflow-fakes.js';
import type { RunState } from './run-state.js';
import { TraceSteps } from './trace-steps.js';

const workflow = workflowOf(`start: done\nnodes:\n  done: { type: end }\n`);

describe("the run's trace", () => {
  it('numbers steps on from the run, stamps them with the clock and keeps a copy of the blackboard', () => {
    const state = structuredClone(freshState(['done'], { n: 1 })) as RunState;
    const trace = new TraceSteps('flow', 5, state, new FakeClock(250));
    const first = trace.step('done', workflow.nodes['done']!, { thought: 'the run ends', action: { type: 'end' }, observation: null, output: 1, durationMs: 1.23456 });
    state.blackboard['n'] = 2;
    const second = trace.step('done', workflow.nodes['done']!, { thought: 'x', action: {}, observation: 'o', error: { code: 'UHLP_INTERNAL', message: 'm', status: 500 }, durationMs: 0 });
    expect(first).toEqual({
      index: 5,
      at: '2026-01-02T03:04:05.250Z',
      workflowId: 'flow',
      stepId: 'done',
      node: 'done',
      type: 'end',
      status: 'completed',
      thought: 'the run ends',
      action: { type: 'end' },
      observation: null,
      snapshot: { n: 1 },
      output: 1,
      durationMs: 1.235,
    });
    expect(second).toMatchObject({ index: 6, status: 'failed', snapshot: { n: 2 }, error: { code: 'UHLP_INTERNAL' } });
    expect(second).not.toHaveProperty('output');
  });

  it('bounds what a step keeps as the core does', () => {
    const state = structuredClone(freshState(['done'], { big: 'x'.repeat(20_000) })) as RunState;
    const step = new TraceSteps('flow', 0, state, new FakeClock()).step('done', workflow.nodes['done']!, {
      thought: 't'.repeat(10_000),
      action: {},
      observation: 'o'.repeat(20_000),
      output: 'p'.repeat(20_000),
      durationMs: 0,
    });
    expect(step.thought).toHaveLength(8192);
    expect(step.observation).toMatchObject({ truncated: true });
    expect(step.output).toMatchObject({ truncated: true });
    expect(step.snapshot).toMatchObject({ truncated: true });
  });
});
