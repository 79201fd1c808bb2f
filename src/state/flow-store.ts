/**
 * Flow control's shared state (src/turns/flow-control.ts): per gate — one key of
 * one route's (component's) concurrency or throttle — a set of slots that
 * expire, so a dead core's slots free up, and a queue of waiting events ordered
 * by priority (higher first) then arrival; per debounce key, the latest event.
 * On Redis every core sees the same gates (redis-flow-store.ts); in memory, one
 * core's (memory-flow-store.ts).
 */

export type FlowGateKind = 'concurrency' | 'throttle' | 'debounce';

/** One key of one route's (or component's) flow declaration. */
export interface FlowGate {
  readonly app: string;
  /** The route's label (`http POST /orders/:id`, `queue:orders`) or `component:<id>`. */
  readonly scope: string;
  readonly kind: FlowGateKind;
  /** The key's value; the empty string when the declaration has no key or the event has no value. */
  readonly key: string;
}

export interface EnterGateOptions {
  /** Slots of the gate. */
  readonly limit: number;
  /** How long a slot taken now lasts unless renewed: a concurrency slot's lease, a throttle's period. */
  readonly holdMs: number;
  /** Among waiting holders, higher first; then the earliest to wait. Integer, ±1000000. */
  readonly priority: number;
  /** How long the holder stays in the queue unless it asks again (its core died). */
  readonly waitTtlMs: number;
}

export interface GateEntry {
  /** The holder has a slot (it had one already, or took one now). */
  readonly granted: boolean;
  /** 1-based place among the waiting when not granted; 0 when granted. */
  readonly position: number;
  /** When every slot is taken: ms until the earliest slot expires (0 when granted). */
  readonly retryAfterMs: number;
}

/** A gate with events waiting, as `uhlp queues` and the console list them. */
export interface WaitingGate extends FlowGate {
  readonly waiting: number;
  /** Slots held now. */
  readonly running: number;
}

export interface FlowStore {
  /**
   * Takes a slot for `holder` when one is free and no waiting holder goes before
   * it; otherwise queues it (or keeps its place, refreshing its wait). Asking
   * again is how a waiting holder polls.
   */
  enterGate(gate: FlowGate, holder: string, options: EnterGateOptions): Promise<GateEntry>;
  /** Extends the holder's slot by `holdMs` from now; false when it has none (it expired). */
  renewGate(gate: FlowGate, holder: string, holdMs: number): Promise<boolean>;
  /** Frees the holder's slot and its place in the queue, whichever it has. */
  leaveGate(gate: FlowGate, holder: string): Promise<void>;
  /** Records `holder` as the latest event of a debounce key, for `ttlMs`. */
  markLatest(gate: FlowGate, holder: string, ttlMs: number): Promise<void>;
  /** The latest event of a debounce key, or undefined once its record expired. */
  latest(gate: FlowGate): Promise<string | undefined>;
  /** Gates with live waiting holders, of one app or every app, most waiting first (at most `limit`). */
  waitingGates(app?: string, limit?: number): Promise<WaitingGate[]>;
}

/** The bound of a priority, either way. */
export const MAX_FLOW_PRIORITY = 1_000_000;

/** Most gates waitingGates lists by default. */
export const DEFAULT_WAITING_GATES_LIMIT = 200;
