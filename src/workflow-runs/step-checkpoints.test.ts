import { describe, expect, it } from 'vitest';
import type { EngineState, SimulationStep } from '../contract/workflow/run-view.js';
import type { RunRecord } from './run-record.js';
import { checkpointedSteps, keepCheckpoint, MAX_CHECKPOINT_BYTES, MAX_CHECKPOINTS_BYTES, pruneCheckpoints, shedCheckpoints } from './step-checkpoints.js';

const state = (blackboard: Record<string, unknown>, frontier = ['a']): EngineState => ({ position: { frontier, arrived: {} }, blackboard, retries: {}, loops: {}, feedback: {}, nodesRun: 0 });
const step = (index: number): SimulationStep => ({ index, at: '', workflowId: 'w', stepId: `s${index}`, node: `n${index}`, type: 'agent', status: 'completed', thought: '', action: {}, observation: null, snapshot: null, durationMs: 1 });
const record = (blackboard: Record<string, unknown> = {}): RunRecord => ({ state: state(blackboard), droppedSteps: 0, steps: [] }) as unknown as RunRecord;

describe('step checkpoints', () => {
  it("keeps the state before a checkpoint's first step, as a copy, and none for the steps riding with it", () => {
    const run = record({ n: 1 });
    keepCheckpoint(run, [step(0), step(1)]);
    (run.state.blackboard as Record<string, unknown>)['n'] = 2;
    expect(run.checkpoints?.['0']).toMatchObject({ state: { blackboard: { n: 1 } } });
    expect(checkpointedSteps(run)).toEqual([0]);
    keepCheckpoint(run, []);
    expect(Object.keys(run.checkpoints!)).toEqual(['0']);
  });

  it('keeps a state over 16 KiB as a note of its size, and is no step to replay from', () => {
    const run = record({ big: 'x'.repeat(MAX_CHECKPOINT_BYTES) });
    keepCheckpoint(run, [step(0)]);
    expect(run.checkpoints?.['0']).toEqual({ cut: true, bytes: expect.any(Number) });
    expect(checkpointedSteps(run)).toEqual([]);
  });

  it('drops the oldest past the total bound, and those of steps the trace dropped', () => {
    const run = record({ fill: 'y'.repeat(MAX_CHECKPOINT_BYTES - 200) });
    const count = Math.ceil(MAX_CHECKPOINTS_BYTES / MAX_CHECKPOINT_BYTES) + 4;
    for (let index = 0; index < count; index++) keepCheckpoint(run, [step(index)]);
    const kept = checkpointedSteps(run);
    expect(kept.at(-1)).toBe(count - 1);
    expect(kept[0]).toBeGreaterThan(0);
    expect(Object.values(run.checkpoints!).reduce((sum, checkpoint) => sum + checkpoint.bytes, 0)).toBeLessThanOrEqual(MAX_CHECKPOINTS_BYTES);
    run.droppedSteps = count - 2;
    pruneCheckpoints(run);
    expect(checkpointedSteps(run)).toEqual([count - 2, count - 1]);
  });

  it('sheds every state to its size for a record over its cap', () => {
    const run = record({ n: 1 });
    keepCheckpoint(run, [step(0)]);
    expect(shedCheckpoints(run)).toBe(true);
    expect(run.checkpoints?.['0']).toEqual({ cut: true, bytes: expect.any(Number) });
    expect(shedCheckpoints(run)).toBe(false);
  });
});
