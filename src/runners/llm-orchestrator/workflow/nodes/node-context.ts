/**
 * What a node of a workflow run is given and what it gives back. A node reaches
 * outside the sandbox only through the execution's clients here (the MCP tools
 * client and core.llm.generate over it), so the core's capability checks and
 * its critical-tool gate hold for every step; it changes only the run's state.
 */
import type { ExecuteRequest } from '../../../../contract/execute-contract.js';
import type { RunView } from '../../../../contract/workflow/run-view.js';
import type { StreamPacket } from '../../../../contract/workflow/stream-packets.js';
import type { WorkflowDefinition } from '../../../../contract/workflow/workflow-schema.js';
import type { McpToolsClient } from '../../../kit/tools-client.js';
import type { Generate } from '../../generate-client.js';
import type { ModelTools } from '../../model-tools.js';
import type { OutputSchemas } from '../../output-schemas.js';
import type { PromptTemplates } from '../../prompt-templates.js';
import type { SkillIndex } from '../../skill-index.js';
import type { RunState } from '../run-state.js';

/** What one node did: where the run goes, and what the trace says of it. */
export interface NodeOutcome {
  readonly next: readonly string[];
  readonly thought: string;
  readonly action: Record<string, unknown>;
  readonly observation: unknown;
  readonly output?: unknown;
  /** An approval node with no decision: the run pauses here. */
  readonly pause?: { readonly prompt: string };
  /** An end node: the run's result. */
  readonly end?: { readonly result: unknown };
  readonly emit?: readonly StreamPacket[];
}

/** A component of the app as `core.workflow.load` lists it. */
export interface ComponentView {
  readonly handler: 'JIT' | 'LLM' | 'WORKFLOW';
  readonly llm?: unknown;
}

/** The run's pending checkpoint, which a JIT step's call carries (run-checkpoints.ts). */
export interface CheckpointCarrier {
  /** The checkpoint still to send; none when nothing is pending. */
  take(): Record<string, unknown> | undefined;
  /** Makes a call that carries a checkpoint. */
  send(tool: string, args: Record<string, unknown>): Promise<Record<string, unknown>>;
}

/** The orchestrator's parts an LLM step uses, kept per sandbox across executions. */
export interface LlmParts {
  readonly templates: PromptTemplates;
  readonly schemas: OutputSchemas;
  readonly modelTools: ModelTools;
  readonly skills: SkillIndex;
}

export interface NodeContext {
  /** The execution's request: its template variables. */
  readonly request: ExecuteRequest;
  readonly workflowId: string;
  readonly workflow: WorkflowDefinition;
  readonly components: Readonly<Record<string, ComponentView>>;
  readonly state: RunState;
  readonly approvals: RunView['approvals'];
  /** The execution's MCP client: tool nodes, JIT calls, and every app file an LLM step reads. */
  readonly tools: McpToolsClient;
  /** Where app files are read: the app at the run's revision, with `tools`. */
  readonly scope: { readonly appId: string; readonly revision: string; readonly tools: McpToolsClient };
  /** core.llm.generate. */
  readonly generate: Generate;
  readonly llm: LlmParts;
  readonly checkpoints: CheckpointCarrier;
}
