/**
 * A span per MCP tool call the core answers: a child of the execution that
 * made it (the sandbox's token maps to its turn: GrantBinding.traceContext),
 * named and attributed as the OpenTelemetry MCP and GenAI conventions say. The
 * call runs in the span's context, so that a federated server's call carries
 * it on in `_meta` (mcpTraceMeta()).
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { SpanKind, SpanStatusCode, context, failSpan, trace, tracer, carrierOf, type Context } from './spans.js';

export function inToolCallSpan(parent: Context, tool: string, run: () => Promise<CallToolResult>): Promise<CallToolResult> {
  // A caller's name is theirs to choose: cut, so that a span name stays a name.
  const name = tool.slice(0, 128);
  const span = tracer().startSpan(
    `tools/call ${name}`,
    { kind: SpanKind.SERVER, attributes: { 'mcp.method.name': 'tools/call', 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': name } },
    parent,
  );
  return context.with(trace.setSpan(parent, span), run).then(
    (result) => {
      if (result.isError === true) {
        const code = (result.structuredContent as { code?: unknown } | undefined)?.code;
        const type = typeof code === 'string' ? code : 'tool_error';
        span.setAttribute('error.type', type);
        span.setStatus({ code: SpanStatusCode.ERROR, message: type });
      }
      span.end();
      return result;
    },
    (error: unknown) => {
      failSpan(span, error);
      span.end();
      throw error;
    },
  );
}

/**
 * The `_meta` keys of an MCP request that carry the active trace context on
 * (`traceparent`, `tracestate`: MCP 2026-07-28, SEP-414); undefined when no span is active.
 */
export function mcpTraceMeta(): Record<string, string> | undefined {
  return carrierOf(context.active());
}
