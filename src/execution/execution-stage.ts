/**
 * The execution stage of a turn, as a seam: what runs a component's execution
 * once its turn has begun and before its ledger entries are written. The base
 * (sandbox-execution.ts) is one /execute in a sandbox; a decorator wraps it
 * for the components that need more (the oracle runs a promoted component's
 * code and its LLM fallback as its stage says, oracle/oracle-executions.ts).
 * Decorators are chosen per component when its app loads (turns/component-turns.ts),
 * never per request, and each calls only what it wraps: an execution goes down
 * to the sandbox and never back into the pipeline.
 */
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { CapabilitiesSpec, ComponentSpec, PoolSpec } from '../apps/schema/app-definition-schema.js';
import type { ExecuteResponse } from '../contract/execute-contract.js';
import type { TurnEvidence } from '../ledger/turn-evidence.js';
import type { TurnEvent } from '../turns/turn-event.js';
import type { Turn } from '../turns/turn-keeper.js';

/** One form a turn's component runs in: the component itself, or a promoted component's llm fallback. */
export interface ExecutionView {
  readonly component: ComponentSpec;
  readonly pool: PoolSpec;
  /** Runs after the turn's answer (a comparison): its outputs are checked, not kept, and its evidence is not the turn's. */
  readonly background?: boolean;
  /** The capabilities of its MCP token. @defaultValue the app's */
  readonly capabilities?: CapabilitiesSpec;
}

/** A valid /execute answer, as the execution stage gives it (its mcp_calls are the core's own count). */
export interface ExecutionResult {
  readonly response: ExecuteResponse;
  readonly text: string;
}

/** One execution of a turn, as the turn pipeline asks for it. */
export interface ExecutionCall {
  readonly event: TurnEvent;
  readonly turn: Turn;
  /** The turn's evidence: the execution's MCP calls, refusals and writes go here (a background view's go elsewhere). */
  readonly evidence: TurnEvidence;
  /** The form the component runs in. @defaultValue the event's component in the event's pool */
  readonly view?: ExecutionView;
}

export interface ExecutionStage {
  /** Runs the call's execution; rejects with the UhlpError the turn fails with. */
  execute(call: ExecutionCall): Promise<ExecutionResult>;
}

/** Wraps the execution stage of one component of a loaded app, or answers it as it is (most components). */
export interface ExecutionDecorator {
  decorate(app: LoadedApp, component: ComponentSpec, inner: ExecutionStage): ExecutionStage;
}
