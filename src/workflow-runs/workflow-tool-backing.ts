/**
 * What backs the workflow tools an orchestrator calls while it drives a run
 * (core.workflow.*, src/mcp/tools/workflow-tools.ts): loading the run with its
 * workflow file and the app's components (and the same answer made ahead for
 * a run's first execution to carry), applying a checkpoint (and emitting
 * its stream packets), running a JIT component for one step, and the gate of
 * the app's critical tools (a run's policy may allow them).
 */
import type { LoadedApp } from '../apps/app-snapshot.js';
import { MAX_LOADED_RUN_BYTES, workflowFileOf, type LoadedRun } from '../contract/workflow/loaded-run.js';
import type { RunView } from '../contract/workflow/run-view.js';
import type { ExecutionGrant } from '../mcp/mcp-token-service.js';
import { PassThroughError, type WorkflowServices } from '../mcp/tool-definition.js';
import type { StreamPacket } from '../contract/workflow/stream-packets.js';
import { UhlpError } from '../shared/errors.js';
import type { PipelineTurns } from './pipeline-turns.js';
import type { RunRecord } from './run-record.js';
import type { Checkpoint, RunService } from './run-service.js';
import type { WorkflowCatalog } from './workflow-catalog.js';

export interface WorkflowToolBackingOptions {
  readonly runs: RunService;
  readonly catalog: WorkflowCatalog;
  readonly pipeline: PipelineTurns;
}

export class WorkflowToolBacking implements WorkflowServices {
  /** Each loaded app's components in the load answer: the same for every run of the app at a revision. */
  private readonly components = new WeakMap<LoadedApp, LoadedRun['components']>();

  constructor(private readonly options: WorkflowToolBackingOptions) {}

  async load(grant: ExecutionGrant): Promise<Record<string, unknown>> {
    const run = await this.options.runs.view(grant.run!.id, grant.requestId);
    return this.answerOf(grant.appId, run);
  }

  /**
   * The load answer of a run just claimed for its first execution, as the JSON
   * the execution's context carries (contract/workflow/loaded-run.ts), or
   * undefined when it is over MAX_LOADED_RUN_BYTES or cannot be made here:
   * the orchestrator then loads the run through MCP, which says why.
   */
  preload(claimed: RunRecord): string | undefined {
    let json: string;
    try {
      json = JSON.stringify(this.answerOf(claimed.appId, this.options.runs.viewOf(claimed)));
    } catch {
      return undefined;
    }
    // A string longer than the bound is over it in bytes too: only a shorter one is counted.
    if (json.length > MAX_LOADED_RUN_BYTES || Buffer.byteLength(json) > MAX_LOADED_RUN_BYTES) return undefined;
    return json;
  }

  /** What core.workflow.load answers of `run`. */
  private answerOf(appId: string, run: RunView): { run: RunView; workflowFile: string; components: LoadedRun['components'] } {
    return { run, workflowFile: workflowFileOf(run.workflowId), components: this.componentsOf(this.options.catalog.app(appId, run.revision)) };
  }

  /** The app's components as the orchestrator sees them; made once per app (revision). */
  private componentsOf(app: LoadedApp): LoadedRun['components'] {
    let components = this.components.get(app);
    if (components === undefined) {
      const made: Record<string, LoadedRun['components'][string]> = {};
      for (const component of app.components.values()) {
        made[component.id] = component.handler === 'LLM' ? { handler: 'LLM', llm: component.llm } : { handler: component.handler };
      }
      components = made;
      this.components.set(app, components);
    }
    return components;
  }

  async checkpoint(grant: ExecutionGrant, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const checkpoint = args as unknown as Checkpoint & { emit?: StreamPacket[] };
    // Packets first: a node's stream ends before the step that ran it is saved.
    for (const packet of checkpoint.emit ?? []) grant.stream?.packet(packet);
    const record = await this.options.runs.checkpoint(grant.run!.id, grant.requestId, checkpoint);
    return { status: record.status, steps: record.droppedSteps + record.steps.length, remainingMs: this.options.runs.remainingMs(record) };
  }

  async invoke(grant: ExecutionGrant, componentId: string, input: unknown, node: string | undefined, signal?: AbortSignal): Promise<Record<string, unknown>> {
    const app = this.options.catalog.app(grant.appId, grant.revision);
    const component = app.components.get(componentId);
    if (component === undefined || component.handler !== 'JIT') {
      throw new UhlpError('UHLP_MCP_INVALID_ARGUMENTS', `"${componentId.slice(0, 63)}" is no JIT component of app ${app.id}`, { field: 'component' });
    }
    const final = await this.options.pipeline.component(app, component, {
      payload: input,
      triggerEvent: `workflow:${grant.componentId}/${node ?? 'step'}`,
      runId: grant.run!.id,
      ...(grant.sessionId !== undefined ? { sessionId: grant.sessionId } : {}),
      ...(signal !== undefined ? { signal } : {}),
    });
    const result = final.result;
    if (result === undefined) throw new UhlpError('UHLP_INTERNAL', `component ${componentId} answered no result`);
    if (result.resultType === 'error') {
      const data = result.data as { code?: unknown; message?: unknown; status?: unknown; details?: unknown };
      throw new PassThroughError(
        typeof data.code === 'string' ? data.code : 'UHLP_SCRIPT_EXCEPTION',
        typeof data.message === 'string' ? data.message : `component ${componentId} failed`,
        final.status,
        data.details,
      );
    }
    return { resultType: result.resultType, data: result.data ?? null };
  }

  async criticalAllowed(grant: ExecutionGrant, tool: string): Promise<boolean> {
    if (grant.run === undefined) return false;
    const record = await this.options.runs.find(grant.run.id);
    return record !== undefined && record.status === 'running' && record.allowedTools.includes(tool);
  }
}
