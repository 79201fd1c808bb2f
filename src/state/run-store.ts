/**
 * Workflow run records as the store keeps them: JSON text with a version for
 * compare-and-set, and the list of active runs a starting core resumes
 * (src/workflow-runs/run-service.ts owns what the JSON holds).
 */

/** A workflow run record as the store keeps it: JSON text (src/workflow-runs/run-record.ts owns its shape) and its version. */
export interface StoredRun {
  readonly json: string;
  /** 1 when created; each update adds one. */
  readonly version: number;
}

export interface RunStore {
  /**
   * Stores a new workflow run record for `ttlMs`; false when a run of that id
   * exists. `active` lists it among the runs a starting core resumes.
   */
  createRun(id: string, json: string, ttlMs: number, active: boolean): Promise<boolean>;
  getRun(id: string): Promise<StoredRun | undefined>;
  /**
   * Replaces a run record if its version is still `expectedVersion` (the new
   * one is `expectedVersion + 1`), atomically, and sets its TTL and whether it
   * is active; false when it changed meanwhile or is gone.
   */
  updateRun(id: string, expectedVersion: number, json: string, ttlMs: number, active: boolean): Promise<boolean>;
  /**
   * Marks that the run is to be cancelled, for `ttlMs`: the core that drives it
   * (this one or another sharing the store) polls the mark and cuts the step in
   * flight. Apart from the record so that polling it reads a few bytes.
   */
  markRunCancel(id: string, ttlMs: number): Promise<void>;
  /** Whether the run's cancellation is marked. */
  runCancelMarked(id: string): Promise<boolean>;
  /**
   * Puts `ticket` at the back of the session's queue of requests waiting for
   * its active run to end (a request already in it keeps its place), alive for
   * `ttlMs` unless refreshed by `sessionQueueHead`; tickets past their time are
   * dropped first. Answers its place (0 = head), or -1 when `max` tickets wait
   * already.
   */
  joinSessionQueue(sessionId: string, ticket: string, max: number, ttlMs: number): Promise<number>;
  /**
   * Keeps `ticket` alive for `ttlMs` more and drops the tickets past their
   * time; answers whether it is at the head (true), behind others (false), or
   * no longer queued (undefined: it was dropped).
   */
  sessionQueueHead(sessionId: string, ticket: string, ttlMs: number): Promise<boolean | undefined>;
  /** Takes `ticket` out of the session's queue (its request started, or gave up). */
  leaveSessionQueue(sessionId: string, ticket: string): Promise<void>;
  /** Ids of active runs, oldest first, at most `limit` (default 1000); runs that expired are left out. */
  listActiveRuns(limit?: number): Promise<string[]>;
}

/** Ids `listActiveRuns` returns when the caller sets no limit. */
export const DEFAULT_ACTIVE_RUNS_LIMIT = 1000;
