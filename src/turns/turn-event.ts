/**
 * A turn as every source hands it to the turn pipeline: the contract's event
 * (its `requestData`, already canonical JSON) and what the turn needs of its
 * source, which is all the pipeline knows of it. An HTTP request and a cron run
 * are the same turn from here on.
 */
import type { ComponentSpec, PoolSpec } from '../apps/schema/app-definition-schema.js';
import type { DeclaredOutput } from '../execution/write-surface.js';
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { ExecutionStream } from '../workflow-runs/execution-stream.js';
import type { CsTarget } from '../contract/cs-bundle/activation-context.js';
import type { IdempotencyBegin, StoredResponse } from '../state/idempotency-store.js';
import type { FlowSlot, RouteFlow } from './flow-control.js';
import type { TurnSource } from './turn-journal-entry.js';
import type { TurnDraft } from './turn-journal.js';

/** How a turn names its session: none (the app's ambient session), a new stored one, or one to continue. */
export type SessionChoice = undefined | { readonly open: true } | { readonly continue: string };

export interface TurnEvent {
  readonly app: LoadedApp;
  readonly component: ComponentSpec;
  readonly pool: PoolSpec;
  /** The execution's id: the `/execute` requestId and the answer's X-Request-ID. */
  readonly requestId: string;
  /** The contract's `requestData` as canonical JSON: the sandbox gets it and the ledger hashes it. */
  readonly requestDataJson: string;
  readonly session: SessionChoice;
  /** What the turn declares it writes (the component's and the source's). */
  readonly declaredOutputs: readonly DeclaredOutput[];
  /** Carried to the sandbox as `x-trace-id`. */
  readonly traceId?: string;
  /**
   * Runs at most once per key: an HTTP request's Idempotency-Key, a delivery's
   * invocation id. A repeat gets the stored answer. `fingerprint` tells a repeat
   * from another request that reuses the key.
   */
  readonly once?: {
    readonly key: string;
    readonly fingerprint: string;
    /**
     * How long a run holds the key before a repeat may run again (its core died).
     * @defaultValue the pool's acquire wait + timeout + 30 s
     */
    readonly inFlightTtlMs?: number;
    /**
     * Keep only successful answers (status < 400) for repeats; a failed run frees
     * the key so that the next delivery of the message runs again.
     * @defaultValue false: every answer the component produced is kept
     */
    readonly successOnly?: boolean;
    /**
     * Keeps the answer to replay itself instead of the pipeline storing it at
     * once: a delivery completes the record in the group commit that
     * acknowledges the message (src/sources/delivery-consumer.ts). Until then
     * the record is in flight, so a repeat waits for it rather than runs.
     * @defaultValue the pipeline stores it before the turn's answer returns
     */
    readonly complete?: (response: StoredResponse, ttlMs: number) => void;
    /**
     * The key's claim, made by the source already (a delivery claims the records
     * of the messages one read gives it in one step); the pipeline claims it otherwise.
     * @defaultValue claimed by the pipeline
     */
    readonly begun?: IdempotencyBegin;
  };
  /** How many internal events led to this turn (trigger deliveries); its own core.trigger.emit calls are one deeper. @defaultValue 0 */
  readonly triggerDepth?: number;
  /** A turn of a workflow run (src/workflow-runs/run-driver.ts). */
  readonly workflowRun?: WorkflowRunTurn;
  /** The concurrency slots the turn holds (flow-control.ts): a workflow run it starts keeps them, to take them again when it resumes. @defaultValue none */
  readonly flowSlots?: readonly FlowSlot[];
  /** Where the execution's stream packets go: the client asked for server-sent events. */
  readonly stream?: ExecutionStream;
  /** Keep the sandbox's result on the answer (`FinalResponse.result`): a workflow step reads it. */
  readonly keepResult?: boolean;
  /** Where the turn came from, for the turn journal. @defaultValue `internal` */
  readonly source?: TurnSource;
  /** The route it came by: an HTTP route's pattern, a queue's (cron's, callback's, trigger's) name, a step's trigger event. @defaultValue none */
  readonly route?: string;
  /**
   * The turn's journal record under way, which its stages add their times and calls to
   * (turn-journal.ts); set by the pipeline. @defaultValue none: the turn is not journaled
   */
  readonly journal?: TurnDraft;
  /** The route's flow declaration (src/turns/flow-control.ts); the component's is read from `component.flow`. @defaultValue none */
  readonly flow?: RouteFlow;
  /** The bundle a cs component's turn runs, resolved before the turn begins (src/functions/cs-bundle-turns.ts). */
  readonly cs?: CsTarget;
}

/** What a turn of a workflow run carries to its execution. */
export interface WorkflowRunTurn {
  readonly runId: string;
  /** The execution drives the run (load, checkpoint, emit, invoke): the orchestrator's turn; false for a component a step runs. */
  readonly owner: boolean;
  /** The execution's timeout, ms, instead of the pool's (the run's time left). */
  readonly timeoutMs?: number;
  /** The run's load answer as JSON, for the execution's context to carry (a run's first execution; contract/workflow/loaded-run.ts). */
  readonly loaded?: string;
  /**
   * Aborts when the run is cancelled: the execution is cut (its sandbox
   * destroyed) and its token's calls in flight (model calls, tools, federated
   * servers) are aborted. @defaultValue none
   */
  readonly signal?: AbortSignal;
}
