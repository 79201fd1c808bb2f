import { describe, expect, it } from 'vitest';
import { freshState, workflowOf } from '../../../../test/helpers/workflow-fakes.js';
import { advance, nextWave } from './frontier.js';
import type { RunState } from './run-state.js';

const graph = `
start: fan
nodes:
  fan: { type: tool, tool: core.log, next: [a, b, c] }
  a: { type: tool, tool: core.log, next: join }
  b: { type: tool, tool: core.log, next: join }
  c: { type: tool, tool: core.log, next: free }
  join: { type: end, join: [a, b] }
  free: { type: end }
`;
const parallel = workflowOf(`policy: { execution_mode: parallel }\n${graph}`);

describe('the next wave', () => {
  it('is the first node of the frontier in sequential mode', () => {
    const sequential = workflowOf(`start: a\nnodes:\n  a: { type: tool, tool: core.log, next: b }\n  b: { type: end }\n`);
    expect(nextWave(sequential, ['a', 'b'])).toEqual(['a']);
  });

  it('is the whole frontier in parallel mode', () => {
    expect(nextWave(parallel, ['a', 'b', 'c'])).toEqual(['a', 'b', 'c']);
  });
});

describe('advancing the run', () => {
  function state(arrived: Record<string, string[]> = {}): RunState {
    const fresh = structuredClone(freshState([])) as RunState;
    fresh.position.arrived = arrived;
    return fresh;
  }

  it('adds a node that joins nothing at once', () => {
    const frontier: string[] = [];
    advance(parallel, state(), frontier, 'c', 'free');
    expect(frontier).toEqual(['free']);
  });

  it('holds a join until every node it names has led to it, then adds it once and forgets the arrivals', () => {
    const run = state();
    const frontier: string[] = [];
    advance(parallel, run, frontier, 'a', 'join');
    expect(frontier).toEqual([]);
    expect(run.position.arrived).toEqual({ join: ['a'] });
    advance(parallel, run, frontier, 'a', 'join');
    expect(run.position.arrived).toEqual({ join: ['a'] });
    advance(parallel, run, frontier, 'b', 'join');
    expect(frontier).toEqual(['join']);
    expect(run.position.arrived).toEqual({});
  });

  it('goes on from arrivals a checkpoint kept (a run resumed after a sandbox death)', () => {
    const run = state({ join: ['b'] });
    const frontier: string[] = [];
    advance(parallel, run, frontier, 'a', 'join');
    expect(frontier).toEqual(['join']);
  });

  it('adds a join at once for a node it does not name', () => {
    const frontier: string[] = [];
    advance(parallel, state(), frontier, 'c', 'join');
    expect(frontier).toEqual(['join']);
  });
});
