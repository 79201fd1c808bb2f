/** The console API's answers, as the pages read them (src/console/*-api.ts is the other side). */
export type Role = 'read' | 'operator';

export interface Principal {
  readonly name: string;
  readonly role: Role;
  readonly via: 'loopback' | 'token';
}

export interface Session {
  readonly principal: Principal;
  readonly sandboxOrigin: string;
  readonly features: { readonly runs: boolean; readonly queues: boolean; readonly oracle: boolean; readonly ledger: boolean; readonly requests?: boolean };
}

// The run list's wire types are the core's own (a type-only import, and one constant).
export { RUN_STATUSES, type RunStatus, type RunSummary } from '../../src/contract/workflow/run-summary.js';
import type { RunStatus, RunSummary } from '../../src/contract/workflow/run-summary.js';

export interface RunPage {
  readonly runs: RunSummary[];
  readonly next?: string;
  readonly total?: number;
  readonly countCapped?: boolean;
}

export interface Step {
  readonly index: number;
  readonly at: string;
  readonly stepId: string;
  readonly node: string;
  readonly type: string;
  readonly status: 'completed' | 'failed';
  readonly thought: string;
  readonly action: Record<string, unknown>;
  readonly observation: unknown;
  readonly snapshot: unknown;
  readonly output?: unknown;
  readonly error?: { code: string; message: string };
  readonly durationMs: number;
  /** A replayed or forked run's step that was not run again: its parent's. */
  readonly takenFrom?: { runId: string; index: number };
}

export interface RunDetail {
  readonly run: Record<string, unknown> & {
    id: string;
    app: string;
    component: string;
    workflowId: string;
    revision: string;
    status: RunStatus;
    createdAt: string;
    updatedAt: string;
    attempts: number;
    metadata: Record<string, unknown> | null;
    paused?: { node: string; prompt: string; since: string };
    approvals: Record<string, { approved: boolean; comment?: string; by?: string; at: string }>;
    result?: unknown;
    error?: { code: string; message: string; status: number };
    /** Who cancelled the run (or asked to, while its step is being cut), when, and through what. */
    cancellation?: { by: string; at: string; via: string };
    /** The run this one was replayed or forked from, and the runs replayed or forked from it: its family. */
    parent?: RunFamilyLink;
    children: RunFamilyLink[];
    /** The steps a replay or a fork may start from. */
    checkpointedSteps: number[];
  };
  readonly trace: { droppedSteps: number; steps: Step[] };
  readonly grants: string[];
  /** A paused run's input and blackboard, what the approver decides on. */
  readonly approval?: { readonly input: JsonExcerpt; readonly blackboard: JsonExcerpt };
}

export interface RunFamilyLink {
  readonly runId: string;
  readonly step: number;
  readonly kind: 'replay' | 'fork';
  readonly by: string;
  readonly at: string;
}

export interface JsonExcerpt {
  readonly text: string;
  readonly chars: number;
  readonly truncated: boolean;
}

// The turn journal's records are the core's own type.
export { TURN_SOURCES, type TurnJournalEntry, type TurnSource } from '../../src/turns/turn-journal-entry.js';
import type { TurnJournalEntry } from '../../src/turns/turn-journal-entry.js';

export interface TurnPage {
  readonly turns: TurnJournalEntry[];
  readonly next?: string;
  readonly size: number;
}

export interface TurnDetail {
  readonly turn: TurnJournalEntry;
  /** The turn's ledger entries; null when it kept none. */
  readonly ledger: { readonly exec: Array<Record<string, unknown>>; readonly evidence: Array<Record<string, unknown>> } | null;
  readonly traceUrl?: string;
}

export interface Problem {
  readonly file: string;
  readonly path: string;
  readonly reason: string;
}
