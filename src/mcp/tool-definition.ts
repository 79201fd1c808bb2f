/**
 * The shape of one MCP tool of the core: a name, the capability that makes it
 * available (none for the tools every app has), a TypeBox input schema (listed
 * to clients as JSON Schema and checked before `run`), and `run`, which
 * answers the structured content or throws a UhlpError.
 */
import type { Static, TObject } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import type { CapabilitiesSpec } from '../apps/schema/app-definition-schema.js';
import { UhlpError } from '../shared/errors.js';
import type { Embedder } from '../llm/embedder.js';
import type { LlmService } from '../llm/llm-service.js';
import type { GitDefinitionStore } from '../apps/git/definition-store.js';
import type { Logger } from '../logger.js';
import type { CapabilityName } from './capability-guard.js';
import type { KvStore } from './kv-store.js';
import type { ExecutionGrant } from './mcp-token-service.js';
import type { TokenUsage } from './tool-call-recorder.js';
import type { FunctionStore } from '../functions/function-store.js';
import type { CodeqPublisher } from './tools/fn-tools.js';
import type { SecretStore, SecretUse } from '../secrets/secret-store.js';
import type { SecretScrubber } from '../secrets/secret-scrubber.js';

/** What `endpoint_invoke` on the spine needs: the server's `invoke`, or a fake in tests. */
export interface EndpointInvoker {
  invoke(
    affordanceKey: string,
    capabilityHandle: string,
    normalizedPayload: unknown,
    options?: { timeoutMs?: number; signal?: AbortSignal },
  ): Promise<{ outcome: 'applied' | 'rejected'; reason?: string; referenceId?: string; observation?: unknown }>;
}

/** The core services tools use. */
export interface ToolServices {
  readonly kv: KvStore;
  /** The LLM layer behind core.llm.generate: provider, budget, cache, metrics, evidence. */
  readonly llm: LlmService;
  /** The endpoint spine; shell and web calls fail UHLP_ENDPOINT_UNAVAILABLE without it. */
  readonly spine: EndpointInvoker | undefined;
  /** Materialized revisions: an app's files at a revision are `<root>/<appId>/<revision>/` (revision-paths.ts). */
  readonly revisionsRoot: string;
  /** Writes to the definitions repository; undefined when apps do not come from one (Kubernetes). */
  readonly definitionStore?: GitDefinitionStore;
  /** The execution's own scratch directory (created on first use), the shell's cwd. */
  scratchDir(grant: ExecutionGrant): Promise<string>;
  /** The core's environment, from which `shell.env` picks variables. */
  readonly hostEnv: Readonly<Record<string, string | undefined>>;
  readonly logger: Logger;
  /** cs-js bundles, versions, aliases and activation logs (the runtime store's). @defaultValue none: core.fn.* fail UHLP_STATE_UNAVAILABLE */
  readonly functions?: FunctionStore;
  /** Queue publishing for core.codeq.publish. @defaultValue none: calls fail UHLP_CODEQ_UNAVAILABLE */
  readonly codeq?: CodeqPublisher;
  /** The delivery sources behind core.queue.publish, core.callback.create, core.trigger.emit. @defaultValue none: those tools fail */
  readonly sources?: SourceTools;
  /** Text embeddings behind core.llm.embed. @defaultValue the local embedding */
  readonly embedder?: Embedder;
  /** The core's workflow runs, behind core.workflow.* and core.component.invoke. @defaultValue none: those tools answer 501 */
  readonly workflows?: WorkflowServices;
  /** Each app's own secrets, behind capabilities.web.inject. @defaultValue none: a credential's fetch fails UHLP_SECRET_UNAVAILABLE */
  readonly secrets?: SecretStore;
  /** Removes secret values from tool results before the caller sees them. @defaultValue none */
  readonly scrubber?: SecretScrubber;
}

/** What the source tools need of the core's delivery sources (sources/delivery-sources.ts). */
export interface SourceTools {
  publishQueue(appId: string, name: string, payloadJson: string, invocationId?: string): Promise<{ messageId: string; invocationId: string }>;
  createCallback(appId: string, name: string, correlation: string): { path: string; expiresAt: string };
  emitTrigger(sourceApp: string, event: string, payload: unknown, depth: number): Promise<{ delivered: number; invocationId: string }>;
  /** The base URL callback URLs are given under. */
  publicUrl(): string;
}

/** What the workflow tools ask of the core's run service (src/workflow-runs/workflow-tool-backing.ts). */
export interface WorkflowServices {
  /** The run the grant's execution drives, its workflow file and the app's LLM components. */
  load(grant: ExecutionGrant): Promise<Record<string, unknown>>;
  /** Applies a checkpoint of the run (and emits its packets). */
  checkpoint(grant: ExecutionGrant, checkpoint: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Runs a JIT component of the run's app for one step; answers `{resultType, data}`. */
  /** `signal` cuts the component's execution (its sandbox destroyed): the run was cancelled, or its caller went away. */
  invoke(grant: ExecutionGrant, component: string, input: unknown, node: string | undefined, signal?: AbortSignal): Promise<Record<string, unknown>>;
  /** Whether the grant's run may call a tool the app marks critical. */
  criticalAllowed(grant: ExecutionGrant, tool: string): Promise<boolean>;
}

export interface ToolCall {
  readonly grant: ExecutionGrant;
  readonly services: ToolServices;
  /** Aborted when the client goes away. */
  readonly signal: AbortSignal;
}

/** What a tool answers: its structured content, and the LLM tokens it spent, if any. */
export interface ToolAnswer {
  readonly content: Record<string, unknown>;
  readonly usage?: TokenUsage;
  /** The secrets the call used (names and versions, for evidence; never values). */
  readonly secrets?: readonly SecretUse[];
  /** The result is a secret's value handed in on purpose (core.secrets.read): not scrubbed. @defaultValue false */
  readonly handsInSecret?: boolean;
}

export interface McpTool<S extends TObject = TObject> {
  readonly name: string;
  readonly description: string;
  /** The capability the tool needs; undefined for tools every app has. */
  readonly capability?: CapabilityName;
  /**
   * Listed only to the execution that drives a workflow run (its token owns the run):
   * the engine's own tools are no part of what app code or a model is offered.
   * @defaultValue false
   */
  readonly runOwnerOnly?: boolean;
  readonly inputSchema: S;
  /** Whether the app's capabilities list this tool. @defaultValue the capability is present */
  available?(capabilities: CapabilitiesSpec): boolean;
  run(args: Static<S>, call: ToolCall): Promise<ToolAnswer>;
}

/** Defines a tool with its argument type inferred from the schema. */
export function defineTool<S extends TObject>(tool: McpTool<S>): McpTool<S> {
  return tool;
}

/** Whether `tool` is in the list an app with `capabilities` sees. */
export function isToolAvailable(tool: McpTool, capabilities: CapabilitiesSpec): boolean {
  if (tool.available !== undefined) return tool.available(capabilities);
  return tool.capability === undefined || capabilities[tool.capability] !== undefined;
}

const checkers = new WeakMap<TObject, ReturnType<typeof TypeCompiler.Compile>>();

/** Checks arguments against the tool's schema; UHLP_MCP_INVALID_ARGUMENTS names the field at fault. */
export function checkArguments<S extends TObject>(tool: McpTool<S>, args: unknown): Static<S> {
  let checker = checkers.get(tool.inputSchema);
  if (checker === undefined) {
    checker = TypeCompiler.Compile(tool.inputSchema);
    checkers.set(tool.inputSchema, checker);
  }
  const value = args ?? {};
  if (checker.Check(value)) return value as Static<S>;
  const first = checker.Errors(value).First();
  const field = first?.path.replace(/^\//, '').replaceAll('/', '.') || 'arguments';
  throw new UhlpError('UHLP_MCP_INVALID_ARGUMENTS', `${tool.name}: ${field}: ${first?.message ?? 'invalid arguments'}`, { tool: tool.name, field });
}

/**
 * An app component's error that a tool passes on as it is: the tool error's
 * structured content carries the component's own code and status (metrics and
 * evidence count it as UHLP_SCRIPT_EXCEPTION, a bounded label).
 */
export class PassThroughError extends UhlpError {
  constructor(
    readonly appCode: string,
    message: string,
    readonly appStatus: number,
    details?: unknown,
  ) {
    super('UHLP_SCRIPT_EXCEPTION', message, details);
  }
}
