/**
 * Every tool the core serves over MCP, and the list one app sees: the tools
 * every app has plus those its capabilities allow.
 */
import type { CapabilitiesSpec } from '../apps/schema/app-definition-schema.js';
import { type McpTool, isToolAvailable } from './tool-definition.js';
import { executeCommand, webFetch } from './tools/endpoint-tools.js';
import { getConfigValue, log } from './tools/framework-tools.js';
import { kvDel, kvGet, kvSet } from './tools/kv-tools.js';
import { llmGenerate } from './tools/llm-tool.js';
import { applyStateDiff, getDefinitionFileContent } from './tools/state-tools.js';
import { codeqPublish, fnAliasSet, fnBundle, fnLog, fnPublish, fnVersions } from './tools/fn-tools.js';
import { callbackCreate, queuePublish, triggerEmit } from './tools/source-tools.js';
import { llmEmbed } from './tools/embed-tool.js';
import { secretsRead } from './tools/secrets-tool.js';
import { componentInvoke, workflowCheckpoint, workflowEmit, workflowLoad } from './tools/workflow-tools.js';

export const CORE_TOOLS: readonly McpTool[] = [
  getDefinitionFileContent,
  applyStateDiff,
  getConfigValue,
  llmGenerate,
  executeCommand,
  webFetch,
  secretsRead,
  kvGet,
  kvSet,
  kvDel,
  log,
  fnPublish,
  fnVersions,
  fnAliasSet,
  fnBundle,
  fnLog,
  codeqPublish,
  queuePublish,
  callbackCreate,
  triggerEmit,
  llmEmbed,
  workflowLoad,
  workflowCheckpoint,
  workflowEmit,
  componentInvoke,
] as unknown as readonly McpTool[];

const BY_NAME = new Map(CORE_TOOLS.map((tool) => [tool.name, tool]));

export function findTool(name: string): McpTool | undefined {
  return BY_NAME.get(name);
}

/** The tools listed to an execution: those its capabilities allow, and the engine's own to a run's owner. */
export function toolsFor(capabilities: CapabilitiesSpec, runOwner = false): McpTool[] {
  return CORE_TOOLS.filter((tool) => isToolAvailable(tool, capabilities) && (runOwner || tool.runOwnerOnly !== true));
}
