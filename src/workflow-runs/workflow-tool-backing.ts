/**
 * What backs the workflow tools an orchestrator calls while it drives a run
 * (core.workflow.*, src/mcp/tools/workflow-tools.ts): loading the run with its
 * workflow file and the app's components, applying a checkpoint (and emitting
 * its stream packets), running a JIT component for one step, and the gate of
 * the app's critical tools (a run's policy may allow them).
 */
import type { ExecutionGrant } from '../mcp/mcp-token-service.js';
import { PassThroughError, type WorkflowServices } from '../mcp/tool-definition.js';
import type { StreamPacket } from '../contract/workflow/stream-packets.js';
import { UhlpError } from '../shared/errors.js';
import type { PipelineTurns } from './pipeline-turns.js';
import type { Checkpoint, RunService } from './run-service.js';
import type { WorkflowCatalog } from './workflow-catalog.js';

export interface WorkflowToolBackingOptions {
  readonly runs: RunService;
  readonly catalog: WorkflowCatalog;
  readonly pipeline: PipelineTurns;
}

export class WorkflowToolBacking implements WorkflowServices {
  constructor(private readonly options: WorkflowToolBackingOptions) {}

  async load(grant: ExecutionGrant): Promise<Record<string, unknown>> {
    const runId = grant.run!.id;
    const run = await this.options.runs.view(runId, grant.requestId);
    const app = this.options.catalog.app(grant.appId, run.revision);
    const components: Record<string, unknown> = {};
    for (const component of app.components.values()) {
      if (component.handler === 'LLM') components[component.id] = { handler: 'LLM', llm: component.llm };
      else components[component.id] = { handler: component.handler };
    }
    return { run, workflowFile: `workflows/${run.workflowId}.yaml`, components };
  }

  async checkpoint(grant: ExecutionGrant, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const checkpoint = args as unknown as Checkpoint & { emit?: StreamPacket[] };
    // Packets first: a node's stream ends before the step that ran it is saved.
    for (const packet of checkpoint.emit ?? []) grant.stream?.packet(packet);
    const record = await this.options.runs.checkpoint(grant.run!.id, grant.requestId, checkpoint);
    return { status: record.status, steps: record.droppedSteps + record.steps.length, remainingMs: this.options.runs.remainingMs(record) };
  }

  async invoke(grant: ExecutionGrant, componentId: string, input: unknown, node: string | undefined): Promise<Record<string, unknown>> {
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
