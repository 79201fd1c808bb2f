/**
 * One LLM call on behalf of an app's component: what `core.llm.generate` runs
 * after the capability checks. In order: the answer cache (temperature 0 with a
 * TTL; a hit spends no tokens and no budget), the daily token budget, the
 * provider, then the accounting — tokens charged to the budget, the answer
 * cached, the metrics (one module, bounded labels: the app, its component, the
 * capability's model), and the evidence of the call for the turn's ledger
 * entry. The provider knows nothing of apps; everything per app lives here.
 */
import { isUhlpError } from '../shared/errors.js';
import { hashPayload, type ExternalCall } from '../ledger/ledger-entry.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { answerCacheKey, isCacheable, type LlmCacheStore, readCachedAnswer, writeCachedAnswer } from './llm-answer-cache.js';
import { chargeLlmBudget, checkLlmBudget, type LlmBudgetStore, utcDay } from './llm-budget.js';
import { type LlmGenerateRequest, type LlmGenerateResult, type LlmProvider, type NormalizedLlmRequest, normalizeRequest, normalizedCall } from './llm-provider.js';
import { inModelCallSpan } from '../tracing/model-call-span.js';
import { observeWithTrace } from '../tracing/exemplars.js';

/** The runtime-store methods the service uses: the core's store, memory or Redis. */
export type LlmStateStore = LlmBudgetStore & LlmCacheStore;

export interface LlmServiceOptions {
  readonly provider: LlmProvider;
  /** An app's own provider (spec.llm), used for its calls instead of `provider`. @defaultValue none */
  readonly providerFor?: (appId: string) => LlmProvider | undefined;
  readonly store: LlmStateStore;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Clock, epoch milliseconds; tests move the UTC day with it. @defaultValue Date.now */
  readonly now?: () => number;
}

/** Who is calling, and the app's limits. */
export interface LlmCallContext {
  readonly appId: string;
  readonly componentId: string;
  /** The app's `capabilities.llm.tokensPerDay`. @defaultValue no budget (tokens are still counted) */
  readonly tokensPerDay?: number;
  /** Cache the answer this long; used only at temperature 0. @defaultValue no cache */
  readonly cacheTtlSeconds?: number;
  /** Told about the call for the turn's evidence, once, whatever its outcome (not for a budget refusal: no call was made). */
  readonly record?: (call: ExternalCall) => void;
}

export interface LlmAnswer extends LlmGenerateResult {
  /** Answered from the cache: `usage` is 0 and 0, nothing was spent. */
  readonly cached: boolean;
}

export interface LlmService {
  /** The provider behind the service, for logs and evidence. */
  readonly provider: LlmProvider;
  generate(request: LlmGenerateRequest, context: LlmCallContext): Promise<LlmAnswer>;
}

export function createLlmService(options: LlmServiceOptions): LlmService {
  const { store, metrics, logger } = options;
  const now = options.now ?? Date.now;

  /** The answer's hash covers what the model said, so a cache hit hashes like the answer it replays. */
  const answerHash = (answer: Pick<LlmGenerateResult, 'text' | 'toolCalls'>): string => hashPayload({ text: answer.text, toolCalls: answer.toolCalls });

  return {
    provider: options.provider,
    async generate(request, context) {
      const started = performance.now();
      const provider = options.providerFor?.(context.appId) ?? options.provider;
      const app = context.appId;
      const component = context.componentId;
      let model = request.model ?? provider.defaultModel ?? 'default';
      let normalized: NormalizedLlmRequest;
      try {
        normalized = normalizeRequest(request, provider.defaultModel);
        model = normalized.model;
      } catch (error) {
        metrics.llmCalls.inc({ app, component, model, outcome: outcomeOf(error) });
        throw error;
      }
      const promptHash = hashPayload(normalized.messages);
      const evidence = (status: string, extra: Partial<ExternalCall>): void =>
        context.record?.({
          kind: 'llm',
          target: provider.kind,
          status,
          duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
          model,
          prompt_hash: promptHash,
          ...extra,
        });

      const cacheTtl = isCacheable(normalized, context.cacheTtlSeconds) ? context.cacheTtlSeconds : undefined;
      const cacheKey = cacheTtl !== undefined ? answerCacheKey(provider, normalized) : undefined;
      if (cacheKey !== undefined) {
        // The cache saves money; it must never cost an answer. A store that fails is a miss.
        const hit = await readCachedAnswer(store, app, cacheKey).catch((error: unknown) => {
          logger.warn({ err: error, app, component }, 'LLM answer cache not read');
          return undefined;
        });
        if (hit !== undefined) {
          metrics.llmCacheHits.inc({ app, component });
          evidence('ok', { answer_hash: answerHash(hit), tokens: { prompt: 0, completion: 0 }, cached: true });
          if (hit.text !== null && hit.text !== '') request.onDelta?.(hit.text);
          return { ...hit, usage: { prompt: 0, completion: 0 }, cached: true };
        }
      }

      // The day the call is admitted in is the day it is charged to, even if it ends after midnight.
      let day = utcDay(now());
      if (context.tokensPerDay !== undefined) {
        try {
          day = await checkLlmBudget(store, app, context.tokensPerDay, now());
        } catch (error) {
          metrics.llmCalls.inc({ app, component, model, outcome: outcomeOf(error) });
          throw error;
        }
      }

      const callStarted = performance.now();
      let result: LlmGenerateResult;
      try {
        // Normalized here once: the provider does not check and copy it again.
        result = await inModelCallSpan(provider.kind, normalized, () => provider.generate(normalizedCall(normalized, request.signal, request.onDelta)));
      } catch (error) {
        observeWithTrace(metrics.llmCallSeconds.labels(app, component, model), (performance.now() - callStarted) / 1000);
        metrics.llmCalls.inc({ app, component, model, outcome: outcomeOf(error) });
        evidence(outcomeOf(error), {});
        throw error;
      }
      observeWithTrace(metrics.llmCallSeconds.labels(app, component, model), (performance.now() - callStarted) / 1000);
      metrics.llmCalls.inc({ app, component, model, outcome: 'ok' });
      metrics.llmTokens.inc({ app, component, model, kind: 'prompt' }, result.usage.prompt);
      metrics.llmTokens.inc({ app, component, model, kind: 'completion' }, result.usage.completion);

      // Tokens are counted even without a budget, so a budget set later in the day starts from the truth.
      const spent = result.usage.prompt + result.usage.completion;
      await Promise.all([
        chargeLlmBudget(store, app, day, spent, now()).then(
          (total) => {
            if (context.tokensPerDay !== undefined && context.tokensPerDay > 0) metrics.llmBudgetUsedRatio.set({ app }, total / context.tokensPerDay);
          },
          (error: unknown) =>
            // The answer is paid for already: failing it now would waste the tokens as well.
            logger.warn({ err: error, app, component, tokens: spent }, 'LLM tokens not counted against the daily budget'),
        ),
        cacheKey !== undefined && cacheTtl !== undefined
          ? writeCachedAnswer(store, app, cacheKey, result, cacheTtl).catch((error: unknown) => logger.warn({ err: error, app, component }, 'LLM answer not cached'))
          : undefined,
      ]);
      evidence('ok', { answer_hash: answerHash(result), tokens: { prompt: result.usage.prompt, completion: result.usage.completion }, cached: false });
      return { ...result, cached: false };
    },
  };
}

/** `ok` or the error code; anything else (an abort's reason) is `error`, so labels stay bounded. */
function outcomeOf(error: unknown): string {
  return isUhlpError(error) ? error.code : 'error';
}
