/**
 * The tools the llm-orchestrator drives a workflow run with. Only the
 * execution the core started for the run (its token is bound to the run as
 * its owner) may call them; any other gets 403 UHLP_WORKFLOW_RUN_REQUIRED.
 *
 * - `core.workflow.load`: the run (position, blackboard, retries, approvals,
 *   time left), the workflow file to read and the app's LLM components.
 * - `core.workflow.checkpoint`: after every node, the engine state and the
 *   node's trace step (and the run's end: paused, completed, failed,
 *   timed_out); stream packets may ride along.
 * - `core.workflow.emit`: stream packets (STREAM_START / NODE_STREAM /
 *   STREAM_END) to the client's event stream.
 * - `core.component.invoke`: runs a JIT component of the app through the core
 *   (its own pool, sandbox, token and ledger turn) and answers its result; the
 *   checkpoint of the nodes before it may ride along, applied first.
 */
import { Type } from '@sinclair/typebox';
import { UhlpError } from '../../shared/errors.js';
import { EngineStateSchema, NodeIdSchema as NodeId } from '../../contract/workflow/engine-state-schema.js';
import { StreamPacketSchema } from '../../contract/workflow/stream-packets.js';
import type { ExecutionGrant } from '../mcp-token-service.js';
import { defineTool, type ToolServices, type WorkflowServices } from '../tool-definition.js';
import { recordWorkflowSteps } from '../../tracing/workflow-spans.js';

const Packets = Type.Array(StreamPacketSchema, { maxItems: 256 });
const RunError = Type.Object(
  { code: Type.String({ minLength: 1, maxLength: 128 }), message: Type.String({ maxLength: 4096 }), status: Type.Integer({ minimum: 400, maximum: 599 }), details: Type.Optional(Type.Unknown()) },
  { additionalProperties: false },
);

const Step = Type.Object(
  {
    index: Type.Integer({ minimum: 0 }),
    at: Type.String({ maxLength: 64 }),
    workflowId: Type.String({ maxLength: 64 }),
    stepId: Type.String({ maxLength: 64 }),
    node: Type.String({ maxLength: 64 }),
    type: Type.String({ maxLength: 32 }),
    status: Type.Union([Type.Literal('completed'), Type.Literal('failed')]),
    thought: Type.String({ maxLength: 8192 }),
    action: Type.Record(Type.String(), Type.Unknown()),
    observation: Type.Unknown(),
    snapshot: Type.Unknown(),
    output: Type.Optional(Type.Unknown()),
    error: Type.Optional(RunError),
    durationMs: Type.Number({ minimum: 0 }),
  },
  { additionalProperties: false },
);

function runOf(grant: ExecutionGrant, services: ToolServices): WorkflowServices {
  if (grant.run?.owner !== true) throw new UhlpError('UHLP_WORKFLOW_RUN_REQUIRED', 'only the execution that runs a workflow may drive it');
  if (services.workflows === undefined) throw new UhlpError('UHLP_HANDLER_NOT_SUPPORTED', 'this core runs no workflows');
  return services.workflows;
}

export const workflowLoad = defineTool({
  name: 'core.workflow.load',
  runOwnerOnly: true,
  description: "Loads the workflow run this execution drives: its position, blackboard, retries, approvals and time left, the workflow file, and the app's LLM components.",
  inputSchema: Type.Object({}, { additionalProperties: false }),
  async run(_args, { grant, services }) {
    return { content: await runOf(grant, services).load(grant) };
  },
});

const CheckpointFields = {
  // Left out (only by a checkpoint that fails the run because its state was too large), the run keeps its last state.
  state: Type.Optional(EngineStateSchema),
  steps: Type.Array(Step, { maxItems: 64 }),
  status: Type.Optional(Type.Union([Type.Literal('running'), Type.Literal('paused'), Type.Literal('completed'), Type.Literal('failed'), Type.Literal('timed_out')])),
  result: Type.Optional(Type.Unknown()),
  error: Type.Optional(RunError),
  paused: Type.Optional(Type.Object({ node: NodeId, prompt: Type.String({ maxLength: 4096 }) }, { additionalProperties: false })),
  emit: Type.Optional(Packets),
};

export const workflowCheckpoint = defineTool({
  name: 'core.workflow.checkpoint',
  runOwnerOnly: true,
  description: "Saves the run after a node: the engine state, the node's trace steps, and when the run stops, its status with the result, the error or the approval it waits for.",
  inputSchema: Type.Object(CheckpointFields, { additionalProperties: false }),
  async run(args, { grant, services }) {
    const content = await runOf(grant, services).checkpoint(grant, args as unknown as Record<string, unknown>);
    recordWorkflowSteps(grant.traceContext, grant.run!.id, args.steps, args.status === 'paused' ? args.paused : undefined);
    return { content };
  },
});

export const workflowEmit = defineTool({
  name: 'core.workflow.emit',
  runOwnerOnly: true,
  description: "Sends stream packets (STREAM_START, NODE_STREAM, STREAM_END) to the client's event stream; dropped when the client asked for none.",
  inputSchema: Type.Object({ packets: Packets }, { additionalProperties: false }),
  async run(args, { grant, services }) {
    runOf(grant, services);
    for (const packet of args.packets) grant.stream?.packet(packet);
    return { content: { accepted: grant.stream !== undefined ? args.packets.length : 0 } };
  },
});

export const componentInvoke = defineTool({
  name: 'core.component.invoke',
  runOwnerOnly: true,
  description: 'Runs a JIT component of the app for a workflow step (its own pool and sandbox) and answers {resultType, data}; an error result is this call\'s error.',
  inputSchema: Type.Object(
    {
      component: Type.String({ minLength: 1, maxLength: 63 }),
      input: Type.Optional(Type.Unknown({ description: 'The payload the component gets (requestData.triggerDetails.payload).' })),
      node: Type.Optional(NodeId),
      checkpoint: Type.Optional(
        Type.Object(
          { state: EngineStateSchema, steps: CheckpointFields.steps, emit: CheckpointFields.emit },
          { additionalProperties: false, description: 'The checkpoint of the nodes before this step, applied before the component runs (one round trip instead of two).' },
        ),
      ),
    },
    { additionalProperties: false },
  ),
  async run(args, { grant, services, signal }) {
    const workflows = runOf(grant, services);
    if (args.checkpoint !== undefined) await workflows.checkpoint(grant, args.checkpoint as unknown as Record<string, unknown>);
    // The step's own sandbox is cut with the run (a cancel), or when the orchestrator's call goes away.
    return { content: await workflows.invoke(grant, args.component, args.input ?? null, args.node, signal) };
  },
});
