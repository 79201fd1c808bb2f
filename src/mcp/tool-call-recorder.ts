/**
 * Per-execution record of MCP tool calls: count, time and LLM tokens per tool,
 * in the shape of the /execute response's `metrics.mcp_calls`, and the
 * evidence the ledger takes per turn (every external call, every capability
 * violation) in the ledger's own shapes.
 */
import { McpCallTotals, type McpCallSummary, type TokenUsage } from '../contract/mcp-call-totals.js';
import type { CapabilityViolationRecord, ExternalCall } from '../ledger/ledger-entry.js';
import type { SecretUse } from '../secrets/secret-store.js';

export type { McpCallSummary, TokenUsage };

/** What one execution did through MCP, handed over when it ends. */
export interface McpExecutionRecord {
  /** Per tool, for `metrics.mcp_calls`. */
  readonly calls: McpCallSummary[];
  /**
   * Each call in order, for the ledger's evidence: every tool call (`kind: "mcp"`,
   * the tool, `ok` or the error code), and before the `core.llm.generate` that
   * made it, every LLM call (`kind: "llm"`, model, hashes, tokens).
   */
  readonly externalCalls: ExternalCall[];
  /** Each capability refusal, for the ledger's evidence. */
  readonly capabilityViolations: CapabilityViolationRecord[];
  /** Evidence entries not kept because the execution went past the per-execution cap. */
  readonly droppedEvidence: number;
}

/**
 * Evidence entries kept per execution. A script in a loop (or a dev token used
 * for hours) must not grow the core's memory without bound; counts stay exact.
 */
export const MAX_EVIDENCE_ENTRIES = 1000;

/** The record of an execution that made no call: most of them; shared, and never written to. */
const NOTHING: McpExecutionRecord = Object.freeze({
  calls: Object.freeze([]) as unknown as McpCallSummary[],
  externalCalls: Object.freeze([]) as unknown as ExternalCall[],
  capabilityViolations: Object.freeze([]) as unknown as CapabilityViolationRecord[],
  droppedEvidence: 0,
});

export class ToolCallRecorder {
  /** Made on the first call: one recorder is made per execution, and most executions call nothing. */
  private totals: McpCallTotals | undefined;
  private readonly external: ExternalCall[] = [];
  private readonly violations: CapabilityViolationRecord[] = [];
  private dropped = 0;

  /** Records one call; `status` is `ok` or the error code. */
  record(tool: string, durationMs: number, usage?: TokenUsage, status = 'ok', secrets?: readonly SecretUse[]): void {
    (this.totals ??= new McpCallTotals()).add(tool, durationMs, usage);
    this.keep(this.external, {
      kind: 'mcp',
      target: tool,
      status,
      duration_ms: Math.round(durationMs * 1000) / 1000,
      ...(secrets !== undefined && secrets.length > 0 ? { secrets: secrets.map(({ name, key, version }) => ({ name, key, version })) } : {}),
    });
  }

  /** Records a call of a federated server's tool: the server, and the arguments only as a hash. */
  recordFederated(tool: string, server: string, durationMs: number, status: string, argumentsHash: string): void {
    (this.totals ??= new McpCallTotals()).add(tool, durationMs, undefined);
    this.keep(this.external, { kind: 'mcp', target: tool, server, status, duration_ms: Math.round(durationMs * 1000) / 1000, arguments_hash: argumentsHash });
  }

  /** Records a call a tool made on the sandbox's behalf (an LLM call), in order with the tool calls. */
  recordExternal(call: ExternalCall): void {
    this.keep(this.external, call);
  }

  /** Records a refusal: `capability` as `capabilities.<name>.<rule>`. */
  recordViolation(operation: string, capability: string, detail: string): void {
    this.keep(this.violations, { operation, capability, detail, timestamp: new Date().toISOString() });
  }

  summary(): McpCallSummary[] {
    return this.totals?.summary() ?? [];
  }

  /** Everything recorded, for the end of the execution. */
  snapshot(): McpExecutionRecord {
    if (this.totals === undefined && this.external.length === 0 && this.violations.length === 0 && this.dropped === 0) return NOTHING;
    return { calls: this.summary(), externalCalls: [...this.external], capabilityViolations: [...this.violations], droppedEvidence: this.dropped };
  }

  private keep<T>(list: T[], entry: T): void {
    if (this.external.length + this.violations.length >= MAX_EVIDENCE_ENTRIES) this.dropped += 1;
    else list.push(entry);
  }
}
