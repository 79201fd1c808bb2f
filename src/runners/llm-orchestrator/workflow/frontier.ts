/**
 * Where the run goes (seed 004 §3): the frontier holds the nodes due to run.
 * Sequential mode runs its first node at a time; parallel mode runs the whole
 * frontier as one wave, `next` lists start branches, and a node with `join`
 * waits until every node it names has led to it.
 */
import type { WorkflowDefinition } from '../../../contract/workflow/workflow-schema.js';
import type { RunState } from './run-state.js';

/** The nodes of the next wave. */
export function nextWave(workflow: WorkflowDefinition, frontier: readonly string[]): string[] {
  return workflow.policy.execution_mode === 'parallel' ? [...frontier] : [frontier[0]!];
}

/** Moves the run from `from` to `target` on `frontier`: a join node is added once every node it names has led to it. */
export function advance(workflow: WorkflowDefinition, state: RunState, frontier: string[], from: string, target: string): void {
  const join = workflow.nodes[target]?.join;
  if (join === undefined || !join.includes(from)) {
    frontier.push(target);
    return;
  }
  const arrived = new Set(state.position.arrived[target] ?? []);
  arrived.add(from);
  if (join.every((id) => arrived.has(id))) {
    delete state.position.arrived[target];
    frontier.push(target);
  } else state.position.arrived[target] = [...arrived];
}
