/**
 * Runs one tool call for one grant: finds the tool, refuses it when the app's
 * capabilities do not list it, checks the arguments, runs it, and records the
 * call (per execution, and in the core's metrics). Every failure becomes an MCP
 * tool error whose structured content is `{code, message, status, details}`
 * with a catalog code, so clients and scripts can switch on `code`.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { UhlpError, isUhlpError } from '../shared/errors.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { capabilityDenied } from './capability-guard.js';
import type { ExecutionGrant } from './mcp-token-service.js';
import { findTool } from './tool-catalog.js';
import { PassThroughError, type ToolServices, checkArguments, isToolAvailable } from './tool-definition.js';
import { observeWithTrace } from '../tracing/exemplars.js';

export interface ToolInvokerDeps {
  readonly services: ToolServices;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

export async function invokeTool(
  deps: ToolInvokerDeps,
  grant: ExecutionGrant,
  name: string,
  args: unknown,
  signal: AbortSignal,
): Promise<CallToolResult> {
  const started = performance.now();
  const tool = findTool(name);
  // An unknown name is not a label value we want: it is chosen by the caller.
  const toolLabel = tool?.name ?? 'unknown';
  try {
    if (tool === undefined) throw new UhlpError('UHLP_MCP_TOOL_NOT_FOUND', `no tool named "${name.slice(0, 128)}"`, { tool: name.slice(0, 128) });
    if (!isToolAvailable(tool, grant.capabilities)) {
      throw capabilityDenied(tool.capability!, 'absent', `the app's capabilities do not allow ${tool.name}`, { tool: tool.name });
    }
    const checked = checkArguments(tool, args);
    // Tools the app marks critical need the word of a workflow run: its policy, or an approval.
    if (grant.criticalTools?.has(tool.name) === true && !(await deps.services.workflows?.criticalAllowed(grant, tool.name))) {
      throw new UhlpError(
        'UHLP_TOOL_APPROVAL_REQUIRED',
        `${tool.name} is marked risk_level: critical: only a workflow run whose policy allows it or whose approval granted it may call it`,
        { tool: tool.name },
      );
    }
    const answer = await tool.run(checked, { grant, services: deps.services, signal });
    const durationMs = performance.now() - started;
    grant.calls.record(tool.name, durationMs, answer.usage, 'ok', answer.secrets);
    deps.metrics.mcpCalls.inc({ app: grant.appId, tool: toolLabel, outcome: 'ok' });
    observeWithTrace(deps.metrics.mcpCallSeconds.labels(grant.appId, toolLabel), durationMs / 1000);
    // A secret's value that came back (an API echoing its credential) is replaced before the caller sees it.
    const content = answer.handsInSecret === true ? answer.content : (deps.services.scrubber?.scrubValue(answer.content) ?? answer.content);
    return { content: [{ type: 'text', text: JSON.stringify(content) }], structuredContent: content };
  } catch (thrown) {
    const durationMs = performance.now() - started;
    // A call its caller cut (a cancelled workflow run, a client gone) is no fault of the tool's.
    const cut = !isUhlpError(thrown) && signal.aborted;
    const error = isUhlpError(thrown)
      ? thrown
      : cut
        ? new UhlpError('UHLP_WORKFLOW_CANCELLED', 'the call was cut by its caller', { tool: toolLabel })
        : new UhlpError('UHLP_INTERNAL', 'internal error in the tool; see the core log', { tool: toolLabel });
    if (!isUhlpError(thrown) && !cut) deps.logger.error({ err: thrown, app: grant.appId, tool: toolLabel, requestId: grant.requestId }, 'MCP tool failed');
    grant.calls.record(toolLabel, durationMs, undefined, error.code);
    deps.metrics.mcpCalls.inc({ app: grant.appId, tool: toolLabel, outcome: error.code });
    observeWithTrace(deps.metrics.mcpCallSeconds.labels(grant.appId, toolLabel), durationMs / 1000);
    if (error.code === 'UHLP_CAPABILITY_DENIED') {
      const capability = String((error.details as { capability?: unknown }).capability);
      deps.metrics.capabilityRefusals.inc({ app: grant.appId, capability });
      const rule = String((error.details as { rule?: unknown }).rule);
      grant.calls.recordViolation(describeOperation(toolLabel, args, error.details), `capabilities.${capability}.${rule}`, error.message);
      // The evidence line the ledger will take over: who asked for what, and which rule said no.
      deps.logger.warn({ app: grant.appId, component: grant.componentId, requestId: grant.requestId, tool: toolLabel, details: error.details }, 'capability refused');
    }
    if (error.code === 'UHLP_TOOL_APPROVAL_REQUIRED') {
      grant.calls.recordViolation(describeOperation(toolLabel, args, error.details), 'tools.risk_level.critical', error.message);
      deps.logger.warn({ app: grant.appId, component: grant.componentId, requestId: grant.requestId, tool: toolLabel }, 'critical tool refused');
    }
    const code = error instanceof PassThroughError ? error.appCode : error.code;
    const status = error instanceof PassThroughError ? error.appStatus : error.statusCode;
    const raw = { code, message: error.message, status, ...(error.details !== undefined ? { details: error.details } : {}) };
    const content = deps.services.scrubber?.scrubValue(raw) ?? raw;
    return { isError: true, content: [{ type: 'text', text: `${code}: ${content.message}` }], structuredContent: content };
  }
}

/** A short description of what was attempted, for evidence: the tool and its main argument (the refused path, when a refusal names one). */
function describeOperation(tool: string, args: unknown, details: unknown): string {
  const record = (typeof args === 'object' && args !== null ? args : {}) as Record<string, unknown>;
  const refusedPath = (details as { path?: unknown } | undefined)?.path;
  const main = Array.isArray(record['argv'])
    ? record['argv'].join(' ')
    : (refusedPath ?? record['url'] ?? record['key'] ?? record['model'] ?? record['path']);
  return typeof main === 'string' && main !== '' ? `${tool} ${main.slice(0, 200)}` : tool;
}
