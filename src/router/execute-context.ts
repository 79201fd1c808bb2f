/**
 * Assembles the `context` of an /execute request (contract section 2.4, steps 5-6
 * of section 2.3): who the app and component are, where the MCP server is, how
 * state is reached, the app's configuration, and the task to run.
 */
import type { ExecuteContext } from '../contract/execute-contract.js';
import type { ComponentSpec } from '../definitions/app-definition-schema.js';
import type { LoadedApp } from '../registry/app-snapshot.js';

export interface ContextOptions {
  /** URL of the core's MCP endpoint as sandboxes reach it. */
  mcpEndpoint: string;
  timeoutMs: number;
  sessionId?: string;
}

export function buildExecuteContext(app: LoadedApp, component: ComponentSpec, options: ContextOptions): ExecuteContext {
  const context: ExecuteContext = {
    appId: app.id,
    componentId: component.id,
    mcp_endpoint: options.mcpEndpoint,
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
  if (component.workflow) context.workflowInfo = { workflowId: component.workflow.workflowId };
  if (options.sessionId) context.sessionId = options.sessionId;
  return context;
}
