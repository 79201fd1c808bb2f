/**
 * Per-execution record of MCP tool calls: count, time and LLM tokens per tool,
 * in the shape of the /execute response's `metrics.mcp_calls`.
 */
import type { Static } from '@sinclair/typebox';
import type { McpCallMetric } from '../contract/execute-contract.js';

export type McpCallSummary = Static<typeof McpCallMetric>;

export interface TokenUsage {
  readonly prompt: number;
  readonly completion: number;
}

interface ToolTotals {
  count: number;
  durationMs: number;
  usage: { prompt: number; completion: number } | undefined;
}

export class ToolCallRecorder {
  private readonly tools = new Map<string, ToolTotals>();

  record(tool: string, durationMs: number, usage?: TokenUsage): void {
    let totals = this.tools.get(tool);
    if (totals === undefined) {
      totals = { count: 0, durationMs: 0, usage: undefined };
      this.tools.set(tool, totals);
    }
    totals.count += 1;
    totals.durationMs += durationMs;
    if (usage !== undefined) {
      totals.usage ??= { prompt: 0, completion: 0 };
      totals.usage.prompt += usage.prompt;
      totals.usage.completion += usage.completion;
    }
  }

  summary(): McpCallSummary[] {
    return [...this.tools].map(([tool, totals]) => ({
      tool,
      count: totals.count,
      total_duration_ms: Math.round(totals.durationMs * 1000) / 1000,
      ...(totals.usage !== undefined ? { token_usage: { ...totals.usage } } : {}),
    }));
  }
}
