/**
 * One finished turn as the console lists it (turn-journal.ts): who it was for
 * (app, component, route, source), how it ended (status, code, the error with
 * its stack), where its time went (limit wait, once-only claim, session,
 * execution, ledger), the tool and model calls it made, where its ledger
 * entries are, and its trace id once tracing names one. Every string in it is
 * bounded: a record is at most a few KiB, so the journal's bound is one of bytes too.
 */

/** Where a turn came from. */
export type TurnSource = 'http' | 'queue' | 'cron' | 'callback' | 'trigger' | 'workflow-step' | 'workflow-resume' | 'view' | 'internal';

export const TURN_SOURCES: readonly TurnSource[] = ['http', 'queue', 'cron', 'callback', 'trigger', 'workflow-step', 'workflow-resume', 'view', 'internal'];

/** Milliseconds of each stage of the turn; a stage the turn did not go through is 0. */
export interface TurnTiming {
  /** Waiting for the app's rate limit. */
  limitMs: number;
  /** Waiting at the route's and the component's flow gates (debounce, throttle, concurrency). @defaultValue absent: no flow declared */
  flowMs?: number;
  /** Claiming the once-only record (an Idempotency-Key, a delivery's invocation id), or waiting for a repeat's answer. */
  claimMs: number;
  /** Beginning the session's turn (a stored session is looked up). */
  sessionMs: number;
  /** The executions in a sandbox (a workflow run's turn: all of them). */
  executionMs: number;
  /** Waiting for the ledger's entries (`sync` and `fsync` durability). */
  ledgerMs: number;
}

/** A tool or model call the turn made, as the MCP layer recorded it for the ledger's evidence. */
export interface TurnCall {
  readonly kind: 'tool' | 'model';
  /** The tool's name, or the model. */
  readonly name: string;
  /** `ok`, or the error code. */
  readonly outcome: string;
  readonly durationMs?: number;
  /** A model call's tokens. */
  readonly tokens?: { readonly prompt: number; readonly completion: number };
}

/** Where the turn's ledger entries are: its session's ledger, at its turn number. */
export interface TurnLedgerRef {
  readonly tier: string;
  readonly sessionId: string;
  readonly turnNumber: number;
}

export interface TurnJournalEntry {
  /** The turn's request id (X-Request-ID). */
  readonly id: string;
  readonly app: string;
  readonly component: string;
  /** The HTTP route's pattern, the queue's, cron's, callback's or trigger's name, a step's trigger event. */
  readonly route: string;
  readonly source: TurnSource;
  /** The core that ran it (UHLP_INSTANCE_ID). */
  readonly core: string;
  /** Epoch ms. */
  readonly startedAt: number;
  durationMs: number;
  /** The answer's HTTP status (a failure's status for a turn that threw). */
  status: number;
  /** The error code of a failed turn (its answer's, or what it threw). */
  code?: string;
  /** A failed turn's error: message and, for a script exception, where the script threw. */
  error?: { readonly code: string; readonly message: string; readonly stack?: string };
  readonly timing: TurnTiming;
  toolCalls: number;
  modelCalls: number;
  /** The calls, in order, at most MAX_JOURNAL_CALLS of them (the counts above are exact). */
  readonly calls: TurnCall[];
  /** The turn's ledger entries; absent when it kept none (ledger off, an ambient turn not sampled). */
  ledger?: TurnLedgerRef;
  /** The workflow run the turn belongs to. */
  runId?: string;
  /** The trace the turn is part of, set by tracing when it is on (`setTraceId`). */
  traceId?: string;
  /** The answer was a once-only record's replay: no execution ran. */
  replayed?: boolean;
}

/** Calls kept per record; a script in a loop must not make one record large. */
export const MAX_JOURNAL_CALLS = 50;
/** Characters kept of an error message in a record. */
export const MAX_JOURNAL_MESSAGE_CHARS = 2048;
/** Characters kept of a stack in a record. */
export const MAX_JOURNAL_STACK_CHARS = 4096;
/** Characters kept of a route or name. */
export const MAX_JOURNAL_NAME_CHARS = 256;
