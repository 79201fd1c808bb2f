/**
 * The `context` of an /execute request (contract section 2.4, steps 5-6 of
 * section 2.3): who the app and component are, where the MCP server is, how
 * state is reached, the app's configuration, and the task to run. All of it but
 * the execution's token and session is the same for every execution of a
 * component at a revision, so that part is serialized once and the rest is
 * appended per execution: the context is JSON on its way to the sandbox, and
 * it is the largest part of every request.
 */
import type { ExecuteContext } from '../contract/execute-contract.js';
import type { ComponentSpec } from '../apps/schema/app-definition-schema.js';
import type { LoadedApp } from '../apps/app-snapshot.js';
import { workspaceDirs } from './write-surface.js';
import type { CsTarget } from '../contract/cs-bundle/activation-context.js';

export interface ContextOptions {
  /** URL of the core's MCP endpoint as sandboxes reach it. */
  mcpEndpoint: string;
  /** The execution's MCP bearer token, when the core serves MCP. */
  mcpToken?: string;
  timeoutMs: number;
  sessionId?: string;
  turnNumber?: number;
  /** The bundle a cs component runs at this turn (resolve-cs-component.ts). */
  cs?: CsTarget;
  /** The workflow run the execution drives (WORKFLOW components). */
  workflowRunId?: string;
  /** That run's load answer, JSON, sent as `workflowInfo.loaded` (contract/workflow/loaded-run.ts). */
  workflowLoaded?: string;
}

export function buildExecuteContext(app: LoadedApp, component: ComponentSpec, options: ContextOptions): ExecuteContext {
  const context: ExecuteContext = {
    appId: app.id,
    componentId: component.id,
    mcp_endpoint: options.mcpEndpoint,
    ...(options.mcpToken !== undefined ? { mcp_token: options.mcpToken } : {}),
    stateConfig: {
      type: 'mcp_tool',
      readTool: 'core.state.getDefinitionFileContent',
      writeTool: 'core.state.applyStateDiff',
    },
    configuration: app.document.spec.configuration ?? {},
    applicationInfo: { deploymentMode: app.document.spec.deploymentMode },
    taskDetails: {
      handler: component.handler,
      revision: app.revision,
      timeoutMs: options.timeoutMs,
    },
  };
  if (component.jit) {
    context.taskDetails!.script = component.jit.script;
    context.taskDetails!.function = component.jit.function;
  }
  if (options.cs) context.taskDetails!.cs = { ...options.cs };
  if (component.llm) context.taskDetails!.llm = component.llm;
  if (component.declaredOutputs) context.taskDetails!.declaredOutputs = component.declaredOutputs;
  if (component.workflow) context.workflowInfo = { workflowId: component.workflow.workflowId, ...(options.workflowRunId !== undefined ? { runId: options.workflowRunId } : {}) };
  if (options.sessionId) {
    context.sessionId = options.sessionId;
    context.workspace = workspaceDirs(options.sessionId);
  }
  if (options.turnNumber !== undefined) context.turnNumber = options.turnNumber;
  return context;
}

interface Serialized {
  /** The options the text was made with; a change (a new MCP endpoint) makes it again. */
  readonly mcpEndpoint: string;
  readonly timeoutMs: number;
  /** The context without the execution's part, and without its closing brace. */
  readonly open: string;
}

/**
 * Serializes contexts, each component's shared part once per loaded app
 * (revision). Keyed by the component object, not its id: one component may run
 * in two forms (a promoted component's code and its llm fallback). A cs
 * component's is keyed by its id and the bundle its ref named at the turn.
 */
export class ExecuteContextWriter {
  private readonly cache = new WeakMap<LoadedApp, Map<ComponentSpec | string, Serialized>>();

  /** The JSON of `buildExecuteContext(app, component, options)`. */
  json(app: LoadedApp, component: ComponentSpec, options: ContextOptions): string {
    // A run's execution is one of a few per run: its context is made whole, its run id inside workflowInfo.
    if (options.workflowRunId !== undefined) {
      const context = buildExecuteContext(app, component, options);
      if (options.workflowLoaded === undefined || context.workflowInfo === undefined) return JSON.stringify(context);
      const { workflowInfo, ...rest } = context;
      // The load answer is JSON already (its size was measured on it): put in as it is, not parsed and written again.
      return `${JSON.stringify(rest).slice(0, -1)},"workflowInfo":${JSON.stringify(workflowInfo).slice(0, -1)},"loaded":${options.workflowLoaded}}}`;
    }
    let byComponent = this.cache.get(app);
    if (byComponent === undefined) {
      byComponent = new Map();
      this.cache.set(app, byComponent);
    }
    // A cs component's shared part depends on the bundle its ref resolves to at this turn.
    const key = options.cs === undefined ? component : `${component.id}\0${options.cs.version}\0${options.cs.sha256}`;
    let serialized = byComponent.get(key);
    if (serialized === undefined || serialized.mcpEndpoint !== options.mcpEndpoint || serialized.timeoutMs !== options.timeoutMs) {
      const shared = buildExecuteContext(app, component, { mcpEndpoint: options.mcpEndpoint, timeoutMs: options.timeoutMs, ...(options.cs !== undefined ? { cs: options.cs } : {}) });
      serialized = { mcpEndpoint: options.mcpEndpoint, timeoutMs: options.timeoutMs, open: JSON.stringify(shared).slice(0, -1) };
      byComponent.set(key, serialized);
    }
    let text = serialized.open;
    if (options.mcpToken !== undefined) text += `,"mcp_token":${JSON.stringify(options.mcpToken)}`;
    if (options.sessionId) {
      // Session ids are of a fixed alphabet (letters, digits, "-"): nothing to escape.
      text += `,"sessionId":"${options.sessionId}","workspace":{"tmpDir":"tmp/${options.sessionId}","outputDir":"output/${options.sessionId}"}`;
    }
    if (options.turnNumber !== undefined) text += `,"turnNumber":${options.turnNumber}`;
    return `${text}}`;
  }
}
