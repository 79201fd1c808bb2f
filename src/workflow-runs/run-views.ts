/**
 * A run as clients read it (`GET /_uhlp/runs/<id>` and its trace, the
 * console): its record without the engine's bookkeeping, its values through
 * the response interceptors that are built in (pii-redact), never through an
 * app's own, and what approving it would grant while it is paused.
 */
import type { Logger } from '../logger.js';
import { interceptorContext } from '../contract/workflow/stream-packets.js';
import { interceptorChain } from './interceptors.js';
import { pinnedRun } from './pinned-runs.js';
import { RUNS_PATH } from './run-links.js';
import { traceOf, type RunRecord } from './run-record.js';
import { summaryOf } from './run-index.js';
import type { RunService } from './run-service.js';
import type { WorkflowCatalog } from './workflow-catalog.js';
import { jsonExcerpt, type JsonExcerpt } from './json-excerpt.js';
import { checkpointedSteps } from './step-checkpoints.js';

export interface RunViewsOptions {
  readonly runs: RunService;
  readonly catalog: WorkflowCatalog;
  readonly logger: Logger;
}

export class RunViews {
  constructor(private readonly options: RunViewsOptions) {}

  /** The run as clients see it: its record without the engine's bookkeeping. */
  async view(runId: string): Promise<Record<string, unknown>> {
    const record = await this.options.runs.get(runId);
    const redact = await this.resultRedactor(record);
    // The summary's fields (summaryOf), with the whole error in place of its code, and the run's state beside them.
    const { errorCode: _code, ...summary } = summaryOf(record);
    return {
      ...summary,
      persistence: record.persistence,
      position: record.state.position,
      blackboard: await redact(record.state.blackboard),
      approvals: record.approvals,
      ...(record.status === 'completed' || (record.status === 'cancelled' && record.result !== undefined) ? { result: await redact(record.result) } : {}),
      ...(record.error !== undefined ? { error: record.error } : {}),
      metadata: record.metadata ?? null,
      // The run's family: the runs replayed or forked from it, and the steps a replay or a fork of it may start from.
      children: record.children ?? [],
      checkpointedSteps: checkpointedSteps(record),
      links: { self: `${RUNS_PATH}/${record.id}`, trace: `${RUNS_PATH}/${record.id}/trace`, ...(record.status === 'paused' ? { resume: `${RUNS_PATH}/${record.id}/resume` } : {}) },
    };
  }

  /** The run's trace (seed 004 §8), its values through the response interceptors that are built in. */
  async trace(runId: string): Promise<Record<string, unknown>> {
    const record = await this.options.runs.get(runId);
    const redact = await this.resultRedactor(record);
    return { ...traceOf(record), steps: await Promise.all(record.steps.map(async (step) => (await redact(step)) as Record<string, unknown>)) };
  }

  /**
   * What an approver reads before deciding on a paused run: the input it was started
   * with and its blackboard now, each as a bounded excerpt (json-excerpt.ts), through
   * the same built-in interceptors as the run; undefined for a run that waits for nothing.
   */
  async approvalContext(runId: string): Promise<{ input: JsonExcerpt; blackboard: JsonExcerpt } | undefined> {
    const record = await this.options.runs.get(runId);
    if (record.status !== 'paused') return undefined;
    const redact = await this.resultRedactor(record);
    return { input: jsonExcerpt(await redact(record.input)), blackboard: jsonExcerpt(await redact(record.state.blackboard)) };
  }

  /** The tools the approval node a paused run waits at grants: what approving it allows. */
  async pendingGrants(runId: string): Promise<readonly string[]> {
    const record = await this.options.runs.get(runId);
    if (record.status !== 'paused' || record.paused === undefined) return [];
    try {
      const node = pinnedRun(this.options.catalog, record).workflow.nodes[record.paused.node];
      return node?.type === 'approval' ? node.grants : [];
    } catch {
      // A revision that cannot be read any more grants nothing a reader can be shown.
      return [];
    }
  }

  /** Values of a run as clients read them: through the built-in response interceptors (pii-redact) only. */
  private async resultRedactor(record: RunRecord): Promise<(value: unknown) => Promise<unknown>> {
    let builtIns: readonly string[] = [];
    try {
      builtIns = pinnedRun(this.options.catalog, record).workflow.interceptors.response.filter((name) => name === 'pii-redact');
    } catch {
      // A revision that cannot be read any more: the record is shown as it is.
    }
    if (builtIns.length === 0) return async (value) => value;
    const chain = interceptorChain({ context: interceptorContext(record.id, new Date(), record.id), request: [], response: builtIns, logger: this.options.logger, invoke: async () => null });
    return (value) => chain.result(value);
  }
}
