/**
 * Per-tool totals of MCP calls (count, time, LLM tokens) in the shape of the
 * /execute response's `metrics.mcp_calls`. The runner keeps one per execution
 * for what it reports; the core keeps one per execution for what it trusts.
 */
import type { Static } from '@sinclair/typebox';
import type { McpCallMetric } from './execute-contract.js';

export type McpCallSummary = Static<typeof McpCallMetric>;

export interface TokenUsage {
  readonly prompt: number;
  readonly completion: number;
}

interface Totals {
  count: number;
  durationMs: number;
  usage: { prompt: number; completion: number } | undefined;
}

export class McpCallTotals {
  private readonly tools = new Map<string, Totals>();

  add(tool: string, durationMs: number, usage?: TokenUsage): void {
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

  /** One entry per tool called; empty when none was. */
  summary(): McpCallSummary[] {
    return [...this.tools].map(([tool, totals]) => ({
      tool,
      count: totals.count,
      total_duration_ms: Math.round(totals.durationMs * 1000) / 1000,
      ...(totals.usage !== undefined ? { token_usage: { ...totals.usage } } : {}),
    }));
  }
}
