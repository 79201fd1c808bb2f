/**
 * A CLIENT span per model call, with the OpenTelemetry GenAI conventions'
 * attributes: the operation, the provider, the model asked for and the one
 * that answered, tokens in and out, and why it stopped. The prompt and the
 * answer are on it only when a setting says so (UHLP_TRACE_CAPTURE_PROMPTS):
 * they are the app's users' data.
 */
import type { LlmGenerateResult, NormalizedLlmRequest } from '../llm/llm-provider.js';
import { SpanKind, endingSpan, tracer } from './spans.js';
import { capturePrompts, tracingActive } from './tracing-active.js';

/** The GenAI provider name of the core's provider kinds. */
function providerName(kind: string): string {
  return kind === 'openai-compatible' ? 'openai' : kind;
}

export function inModelCallSpan(kind: string, request: NormalizedLlmRequest, call: () => Promise<LlmGenerateResult>): Promise<LlmGenerateResult> {
  if (!tracingActive()) return call();
  const provider = providerName(kind);
  return tracer().startActiveSpan(
    `chat ${request.model}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': provider,
        'gen_ai.system': provider,
        'gen_ai.request.model': request.model,
        'gen_ai.request.max_tokens': request.maxTokens,
        ...(request.temperature !== undefined ? { 'gen_ai.request.temperature': request.temperature } : {}),
        ...(capturePrompts() ? { 'gen_ai.input.messages': JSON.stringify(request.messages) } : {}),
      },
    },
    (span) =>
      endingSpan(span, async () => {
        const result = await call();
        span.setAttributes({
          'gen_ai.response.model': result.model,
          'gen_ai.usage.input_tokens': result.usage.prompt,
          'gen_ai.usage.output_tokens': result.usage.completion,
          'gen_ai.response.finish_reasons': [result.finishReason],
        });
        if (capturePrompts()) {
          span.setAttribute('gen_ai.output.messages', JSON.stringify([{ role: 'assistant', content: result.text, tool_calls: result.toolCalls }]));
        }
        return result;
      }),
  );
}
