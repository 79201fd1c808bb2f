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
  readonly features: { readonly runs: boolean; readonly queues: boolean; readonly oracle: boolean; readonly ledger: boolean };
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
  };
  readonly trace: { droppedSteps: number; steps: Step[] };
  readonly grants: string[];
}

export interface Problem {
  readonly file: string;
  readonly path: string;
  readonly reason: string;
}
