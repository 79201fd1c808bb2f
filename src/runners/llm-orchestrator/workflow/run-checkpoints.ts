/**
 * The run's checkpoints (seed 004 §3): after each node (each wave in parallel
 * mode) the state and the trace steps go to the core, so that a new execution
 * after a sandbox death goes on from there and a completed node never runs
 * twice.
 *
 * A checkpoint is sent before the next node does anything outside the run:
 * with the next JIT step's call (`core.component.invoke` applies it before it
 * runs the component), or on its own. Only routers, approvals and ends, which
 * touch nothing outside the blackboard, may run before it is sent; the run's
 * last checkpoint (completed, paused, failed) then takes it along.
 */
import type { RunError, SimulationStep } from '../../../contract/workflow/run-view.js';
import type { StreamPacket } from '../../../contract/workflow/stream-packets.js';
import type { WorkflowNode } from '../../../contract/workflow/workflow-schema.js';
import { WorkflowStateTooLargeError } from '../../../shared/workflow-errors.js';
import type { ScriptResult } from '../../kit/script-result.js';
import { ToolCallError, type ToolsClient } from '../../kit/tools-client.js';
import { CHECKPOINT_TOOL } from './engine-tools.js';
import { asRunError } from './run-errors.js';
import { stateCopy, type RunState } from './run-state.js';

/** Nodes before which a pending checkpoint need not be sent on its own (see above). */
const DEFERRING: ReadonlySet<WorkflowNode['type']> = new Set(['jit', 'router', 'approval', 'end']);
/** Stream packets one checkpoint carries at most. */
const MAX_PACKETS = 256;

/** How the run ends, when a checkpoint ends it. */
export interface RunEnding {
  readonly status?: 'completed' | 'paused' | 'failed' | 'timed_out';
  readonly result?: unknown;
  readonly error?: RunError;
  readonly paused?: { readonly node: string; readonly prompt: string };
}

export class RunCheckpoints {
  /** Steps (and packets) of completed nodes not sent to the core yet. */
  private pending: { steps: SimulationStep[]; emit: StreamPacket[] } | undefined;
  /** The run has ended on the core's side (a checkpoint too large failed it): no checkpoint is sent any more. */
  private ended = false;

  constructor(
    private readonly tools: ToolsClient,
    private readonly state: RunState,
  ) {}

  /** Keeps a wave's steps for the next checkpoint: the next call to the core takes them. */
  defer(steps: readonly SimulationStep[], emit: readonly StreamPacket[]): void {
    this.pending ??= { steps: [], emit: [] };
    this.pending.steps.push(...steps);
    this.pending.emit.push(...emit);
  }

  /** The pending checkpoint (state, steps, packets), for a call that applies it; none when nothing is pending. */
  take(): Record<string, unknown> | undefined {
    const pending = this.pending;
    if (pending === undefined) return undefined;
    this.pending = undefined;
    return { state: stateCopy(this.state), steps: pending.steps, ...(pending.emit.length > 0 ? { emit: pending.emit.slice(0, MAX_PACKETS) } : {}) };
  }

  /** Sends the pending checkpoint before a wave, unless the wave is one node that carries it or touches nothing outside the run. */
  async beforeWave(nodes: readonly WorkflowNode[]): Promise<void> {
    if (nodes.length === 1 && DEFERRING.has(nodes[0]!.type)) return;
    await this.flush();
  }

  /** Sends the pending checkpoint on its own. */
  async flush(): Promise<void> {
    if (this.pending !== undefined) await this.checkpoint([]);
  }

  /** Sends the state with the pending steps and `steps`; with `ending`, the run's last checkpoint. */
  async checkpoint(steps: readonly SimulationStep[], emit: readonly StreamPacket[] = [], ending: RunEnding = {}): Promise<void> {
    const pending = this.pending;
    this.pending = undefined;
    const allSteps = pending !== undefined ? [...pending.steps, ...steps] : steps;
    const allEmit = pending !== undefined ? [...pending.emit, ...emit] : emit;
    await this.send(CHECKPOINT_TOOL, { state: this.state, steps: allSteps, ...ending, ...(allEmit.length > 0 ? { emit: allEmit.slice(0, MAX_PACKETS) } : {}) });
  }

  /**
   * A call that carries a checkpoint: core.workflow.checkpoint, or
   * core.component.invoke with the pending one. Over the run cap the core fails
   * the run itself (UHLP_WORKFLOW_STATE_TOO_LARGE) and nothing more is sent.
   * Over the MCP endpoint's body limit the core cannot read it at all (413
   * UHLP_BODY_TOO_LARGE): the run is failed from here with the same code, by a
   * checkpoint without the state, so that the run keeps the state of its last
   * checkpoint.
   */
  async send(tool: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    try {
      return await this.tools.call(tool, args);
    } catch (error) {
      if (!(error instanceof ToolCallError)) throw error;
      if (error.code === 'UHLP_WORKFLOW_STATE_TOO_LARGE') this.ended = true;
      if (error.code !== 'UHLP_BODY_TOO_LARGE') throw error;
      const failure = new WorkflowStateTooLargeError(`the run's checkpoint is too large for the core to read (${error.message}); the run failed`, error.details);
      this.ended = true;
      await this.tools.call(CHECKPOINT_TOOL, { steps: [], status: 'failed', error: asRunError(failure) });
      throw failure;
    }
  }

  /** Ends the run failed (timed_out for a timeout) and answers its error; a run the core has ended already is not checkpointed again. */
  async fail(error: RunError, steps: readonly SimulationStep[] = [], emit: readonly StreamPacket[] = []): Promise<ScriptResult> {
    const status = error.code === 'UHLP_WORKFLOW_TIMEOUT' ? 'timed_out' : 'failed';
    if (!this.ended) await this.checkpoint(steps, emit, { status, error });
    return { resultType: 'error', data: { code: error.code, message: error.message, status: error.status, ...(error.details !== undefined ? { details: error.details } : {}) } };
  }
}
