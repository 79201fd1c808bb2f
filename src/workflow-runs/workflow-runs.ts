/**
 * The core's side of workflow runs, wired from its parts: a WORKFLOW
 * component's turn becomes a run (workflow-run-turns.ts) that the
 * llm-orchestrator drives in a sandbox through MCP while the core owns it
 * (run-driver.ts); the workflow tools the orchestrator calls
 * (workflow-tool-backing.ts); approvals (run-approvals.ts), cancels
 * (run-cancels.ts), replays and forks (run-replays.ts) and what clients
 * read of a run (run-views.ts); and, on Redis state, runs whose core stopped
 * (orphan-sweeper.ts).
 */
import type { Logger } from '../logger.js';
import type { LeaseStore } from '../state/lease-store.js';
import type { TurnPipeline } from '../turns/turn-pipeline.js';
import { McpRunTasks } from './mcp-run-tasks.js';
import { OrphanSweeper } from './orphan-sweeper.js';
import { PipelineTurns } from './pipeline-turns.js';
import { RunApprovals } from './run-approvals.js';
import { RunCancels } from './run-cancels.js';
import { RunDriver } from './run-driver.js';
import { RunReplays } from './run-replays.js';
import type { RunsLedger } from './runs-routes.js';
import type { RunService } from './run-service.js';
import { RunViews } from './run-views.js';
import { SessionRuns } from './session-runs.js';
import type { WorkflowCatalog } from './workflow-catalog.js';
import { WorkflowRunTurns } from './workflow-run-turns.js';
import { WorkflowToolBacking } from './workflow-tool-backing.js';

export interface WorkflowRunsOptions {
  readonly runs: RunService;
  /** The runtime store's leases: one core at a time drives a run. */
  readonly leases: LeaseStore;
  readonly catalog: WorkflowCatalog;
  readonly logger: Logger;
  /** The core's runtime state: runs survive a restart only on Redis. */
  readonly stateKind: 'memory' | 'redis';
  /** This core, for the leases of the runs it drives. */
  readonly instanceId: string;
  /** How long a run record is kept after its last change, ms: what an MCP task's `ttlMs` says. @defaultValue one day */
  readonly runTtlMs?: number;
}

export class WorkflowRuns {
  /** The turns of WORKFLOW components, as runs: a decorator of their turn, chosen when their app loads. */
  readonly turns: WorkflowRunTurns;
  /** What the core.workflow.* tools call. */
  readonly tools: WorkflowToolBacking;
  readonly approvals: RunApprovals;
  readonly cancels: RunCancels;
  readonly replays: RunReplays;
  /** The run records (what a cancel reads before it is made). */
  readonly runs: RunService;
  readonly views: RunViews;
  readonly sweeper: OrphanSweeper;
  /** Runs started and followed by MCP clients: the start tool, tasks and approvals as input_required. */
  readonly mcpTasks: McpRunTasks;
  private readonly driver: RunDriver;
  private readonly pipeline: PipelineTurns;
  private readonly sessions: SessionRuns;

  constructor(options: WorkflowRunsOptions) {
    const { runs, leases, catalog, logger, stateKind } = options;
    this.runs = runs;
    this.pipeline = new PipelineTurns(logger);
    this.tools = new WorkflowToolBacking({ runs, catalog, pipeline: this.pipeline });
    const tools = this.tools;
    this.driver = new RunDriver({ runs, leases, logger, instanceId: options.instanceId, preload: (claimed) => tools.preload(claimed) });
    const parts = { runs, catalog, driver: this.driver, pipeline: this.pipeline };
    this.cancels = new RunCancels({ ...parts, logger });
    // Double texting: a session's active run, and what a second request of the session does meanwhile.
    const sessions = new SessionRuns({ runs, leases, cancels: this.cancels, logger });
    this.sessions = sessions;
    this.turns = new WorkflowRunTurns({ ...parts, logger, stateKind, sessions });
    this.approvals = new RunApprovals(parts);
    this.replays = new RunReplays({ ...parts, logger });
    this.views = new RunViews({ runs, catalog, logger });
    this.mcpTasks = new McpRunTasks({ ...parts, approvals: this.approvals, cancels: this.cancels, logger, ttlMs: options.runTtlMs ?? 86_400_000 });
    this.sweeper = new OrphanSweeper({ ...parts, leases, logger, stateKind });
  }

  /** The pipeline resumed runs and the components of steps and interceptors run through (it is built after the MCP server that needs `tools`). */
  attach(pipeline: TurnPipeline): void {
    this.pipeline.attach(pipeline);
  }

  /** Where the cancels made through MCP's tasks/cancel and by double texting (interrupt, rollback) are ledgered, as the HTTP route's are. */
  useLedger(ledger: RunsLedger): void {
    this.mcpTasks.useLedger(ledger);
    this.sessions.useLedger(ledger);
  }

  /** Picks up runs whose core stopped, now and every few seconds (Redis state only). */
  start(): void {
    this.sweeper.start();
  }

  /** The core stops: no more sweeps, and runs it drives whose sandboxes go away are left for the next core (Redis) rather than failed. */
  stop(): void {
    this.driver.stop();
    this.sweeper.stop();
  }
}
