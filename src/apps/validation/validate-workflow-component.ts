/**
 * The rules of a WORKFLOW component that its schema cannot express: its
 * workflow file (`workflows/<workflowId>.yaml`) exists and is a valid workflow
 * for this app (validate-workflow.ts: nodes, components, tools, files), and an
 * app whose workflow asks a model has the llm capability. Problems of the
 * workflow file name that file and a JSON pointer into it.
 */
import path from 'node:path';
import type { AppSpec, ComponentSpec } from '../schema/app-definition-schema.js';
import { findTool } from '../../mcp/tool-catalog.js';
import { toolGrant } from '../../mcp/federation/tool-grant.js';
import { isFederatedToolName } from './validate-mcp-servers.js';
import { isToolAvailable } from '../../mcp/tool-definition.js';
import { readWorkflow, type WorkflowAppView } from '../../contract/workflow/validate-workflow.js';
import type { DefinitionProblem } from './validate-app-definition.js';

export interface WorkflowComponentContext {
  /** app.yaml, relative to the definitions directory. */
  readonly file: string;
  fileExists(appRelativePath: string): boolean;
  readFile?(appRelativePath: string): string | undefined;
}

/** The app file of a workflow. */
export function workflowFile(workflowId: string): string {
  return `workflows/${workflowId}.yaml`;
}

/** The view of an app the workflow validator asks about: its components, tools (as its capabilities allow them) and files. */
export function workflowAppView(spec: AppSpec, fileExists?: (appRelativePath: string) => boolean): WorkflowAppView {
  const handlers = new Map(spec.components.map((component) => [component.id, component.handler]));
  return {
    componentHandler: (id) => handlers.get(id),
    toolProblem: (name) => {
      const tool = findTool(name);
      if (tool === undefined && isFederatedToolName(spec, name)) {
        return toolGrant(spec.capabilities ?? {})(name) ? undefined : `the app's capabilities do not allow ${name} (capability mcp)`;
      }
      if (tool === undefined) return `no tool named "${name}"`;
      if (!isToolAvailable(tool, spec.capabilities ?? {})) return `the app's capabilities do not allow ${name} (capability ${tool.capability})`;
      return undefined;
    },
    ...(fileExists !== undefined ? { fileExists } : {}),
  };
}

/** Problems of `component` (a WORKFLOW component) and of its workflow file. `at` is the component's pointer in app.yaml. */
export function workflowComponentProblems(spec: AppSpec, component: ComponentSpec, at: string, context: WorkflowComponentContext): DefinitionProblem[] {
  const workflowId = component.workflow?.workflowId;
  if (workflowId === undefined) return [];
  const relative = workflowFile(workflowId);
  const file = path.posix.join(path.posix.dirname(context.file), relative);
  if (!context.fileExists(relative)) return [{ file: context.file, path: `${at}/workflow/workflowId`, reason: `"${relative}" does not exist in the app directory` }];
  const text = context.readFile?.(relative);
  if (text === undefined) return [];
  const read = readWorkflow(text, workflowAppView(spec, context.fileExists));
  if (!read.ok) return read.problems.map((problem) => ({ file, path: problem.path, reason: problem.reason }));
  const asksModel = Object.values(read.workflow.nodes).some((node) => node.type === 'agent' || node.type === 'evaluator');
  if (asksModel && spec.capabilities?.llm === undefined) {
    return [{ file: context.file, path: `${at}/handler`, reason: `workflow "${workflowId}" has agent or evaluator nodes: the app needs the llm capability (spec.capabilities.llm)` }];
  }
  return [];
}
