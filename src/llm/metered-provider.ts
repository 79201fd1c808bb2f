/**
 * Wraps a provider so that every call lands in the LLM metrics: tokens by kind
 * and the call's duration by outcome. Wrapped per app, because the app is what
 * the dashboards split by and the provider itself does not know it.
 */
import { isUhlpError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import type { LlmGenerateRequest, LlmGenerateResult, LlmProvider } from './llm-provider.js';

export function withLlmMetrics(provider: LlmProvider, metrics: Metrics, app: string): LlmProvider {
  return {
    kind: provider.kind,
    ...(provider.defaultModel !== undefined ? { defaultModel: provider.defaultModel } : {}),
    async generate(request: LlmGenerateRequest): Promise<LlmGenerateResult> {
      const started = performance.now();
      // Label by the requested model: the answer's model name can carry a
      // version suffix per call, which would make the label unbounded.
      const model = request.model ?? provider.defaultModel ?? 'default';
      try {
        const result = await provider.generate(request);
        metrics.llmTokens.inc({ app, model, kind: 'prompt' }, result.usage.prompt);
        metrics.llmTokens.inc({ app, model, kind: 'completion' }, result.usage.completion);
        metrics.llmRequestSeconds.observe({ app, model, outcome: 'ok' }, (performance.now() - started) / 1000);
        return result;
      } catch (error) {
        const outcome = isUhlpError(error) ? error.code : 'error';
        metrics.llmRequestSeconds.observe({ app, model, outcome }, (performance.now() - started) / 1000);
        throw error;
      }
    },
  };
}
