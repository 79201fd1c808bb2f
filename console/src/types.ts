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

export type RunStatus = 'running' | 'paused' | 'completed' | 'failed' | 'timed_out';
export const RUN_STATUSES: readonly RunStatus[] = ['running', 'paused', 'completed', 'failed', 'timed_out'];

export interface RunSummary {
  readonly id: string;
  readonly app: string;
  readonly component: string;
  readonly workflowId: string;
  readonly revision: string;
  readonly status: RunStatus;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly steps: number;
  readonly attempts: number;
  readonly paused?: { readonly node: string; readonly prompt: string; readonly since: string };
  readonly errorCode?: string;
}

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
