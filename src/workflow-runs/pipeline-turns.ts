/**
 * The turns a workflow run starts that enter the turn pipeline as new events,
 * as a source's do (limits included): a JIT component a step or an
 * interceptor runs, and the executions of a run nobody's request is waiting
 * on (an approval's resume, a run whose core stopped). The pipeline is built
 * after the MCP server that needs the run's tools, so it is attached late.
 */
import { randomUUID } from 'node:crypto';
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { ComponentSpec } from '../apps/schema/app-definition-schema.js';
import { interceptorContext } from '../contract/workflow/stream-packets.js';
import type { WorkflowDefinition } from '../contract/workflow/workflow-schema.js';
import type { FinalResponse } from '../execution/result-interpreter.js';
import type { Logger } from '../logger.js';
import { PassThroughError } from '../mcp/tool-definition.js';
import { canonicalJson } from '../shared/canonical-json.js';
import { UhlpError } from '../shared/errors.js';
import type { TurnPipeline } from '../turns/turn-pipeline.js';
import { interceptorChain, type InterceptorChain } from './interceptors.js';
import type { RunRecord } from './run-record.js';

/** A JIT component a run calls: for one step, or as one of its interceptors. */
export interface ComponentCall {
  readonly payload: unknown;
  readonly triggerEvent: string;
  readonly runId: string;
  readonly sessionId?: string;
  /** Cuts the component's execution (its sandbox destroyed): the run that called it was cancelled. @defaultValue never cut */
  readonly signal?: AbortSignal;
}

export class PipelineTurns {
  private pipeline: TurnPipeline | undefined;

  constructor(private readonly logger: Logger) {}

  /** The pipeline these turns run through (built after the MCP server that needs the run's tools). */
  attach(pipeline: TurnPipeline): void {
    this.pipeline = pipeline;
  }

  /** Runs a JIT component of the app through the pipeline, as a step or an interceptor of a run; the answer keeps its result. */
  component(app: LoadedApp, component: ComponentSpec, call: ComponentCall): Promise<FinalResponse> {
    const pipeline = this.attached();
    return pipeline.run(
      {
        app,
        component,
        pool: app.pools.get(component.pool)!,
        requestId: randomUUID(),
        source: 'workflow-step',
        route: call.triggerEvent,
        requestDataJson: canonicalJson({ source: 'trigger', triggerDetails: { sourceAppId: app.id, triggerEvent: call.triggerEvent, payload: call.payload ?? null } }),
        session: call.sessionId !== undefined ? { continue: call.sessionId } : undefined,
        declaredOutputs: component.declaredOutputs ?? [],
        workflowRun: { runId: call.runId, owner: false, ...(call.signal !== undefined ? { signal: call.signal } : {}) },
        keepResult: true,
      },
      {},
    );
  }

  /** The run's interceptors (seed 004 §6), each a JIT component of the app run as a turn of its own. */
  interceptors(app: LoadedApp, workflow: WorkflowDefinition, requestId: string, runId: string, sessionId: string | undefined): InterceptorChain {
    return interceptorChain({
      context: interceptorContext(requestId, new Date(), runId),
      request: workflow.interceptors.request,
      response: workflow.interceptors.response,
      logger: this.logger,
      invoke: async (name, payload) => {
        const component = app.components.get(name);
        if (component === undefined || component.handler !== 'JIT') throw new UhlpError('UHLP_WORKFLOW_INVALID', `interceptor ${name} is no JIT component of app ${app.id}`);
        const final = await this.component(app, component, { payload, triggerEvent: `interceptor:${String(payload['interceptor'])}`, runId, ...(sessionId !== undefined ? { sessionId } : {}) });
        if (final.result?.resultType === 'error') {
          const data = final.result.data as { code?: unknown; message?: unknown; details?: unknown };
          throw new PassThroughError(typeof data.code === 'string' ? data.code : 'UHLP_SCRIPT_EXCEPTION', typeof data.message === 'string' ? data.message : `interceptor ${name} failed`, final.status, data.details);
        }
        return final.result?.data ?? null;
      },
    });
  }

  /**
   * Runs `work` (a drive of a run no client request holds the slots of: an
   * approval's resume, a restart, an on_cancel leg, a replay) once the run's
   * concurrency slots are taken again; they are held until it pauses or ends.
   */
  holdingSlots<T>(record: Pick<RunRecord, 'appId' | 'flowSlots'>, work: () => Promise<T>): Promise<T> {
    return this.attached().holdFlow(record.appId, record.flowSlots ?? [], work);
  }

  /** The pipeline, to run a run's executions through from its first stage; UHLP_INTERNAL before it is attached. */
  attached(): TurnPipeline {
    if (this.pipeline === undefined) throw new UhlpError('UHLP_INTERNAL', 'the workflow runtime has no turn pipeline');
    return this.pipeline;
  }
}
