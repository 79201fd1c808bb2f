import { describe, expect, it } from 'vitest';
import { createMetrics } from '../metrics.js';
import { withLlmMetrics } from './metered-provider.js';
import { createScriptedProvider } from './scripted-provider.js';

describe('withLlmMetrics', () => {
  it('counts prompt and completion tokens and times each call by outcome', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const provider = withLlmMetrics(createScriptedProvider({ entries: [{ match: 'hi', answer: 'hello there!' }] }), metrics, 'shop');
    await provider.generate({ model: 'm1', prompt: 'hi you', maxTokens: 10 });
    await provider.generate({ model: 'm1', prompt: 'hi again', maxTokens: 10 });
    await expect(provider.generate({ model: 'm1', prompt: 'zzz', maxTokens: 10 })).rejects.toMatchObject({ code: 'UHLP_LLM_NO_SCRIPTED_ANSWER' });

    const tokens = await metrics.llmTokens.get();
    const byKind = Object.fromEntries(tokens.values.map((value) => [value.labels['kind'], value]));
    expect(byKind['prompt']).toMatchObject({ value: 2 + 2, labels: { app: 'shop', model: 'm1' } });
    expect(byKind['completion']).toMatchObject({ value: 3 + 3 });

    const text = await metrics.registry.metrics();
    expect(text).toContain('uhlp_llm_request_duration_seconds_count{app="shop",model="m1",outcome="ok"} 2');
    expect(text).toContain('uhlp_llm_request_duration_seconds_count{app="shop",model="m1",outcome="UHLP_LLM_NO_SCRIPTED_ANSWER"} 1');
  });

  it('labels a call without a model by the provider default', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const provider = withLlmMetrics(createScriptedProvider({ entries: [], default: 'ok' }), metrics, 'a');
    await provider.generate({ prompt: 'x', maxTokens: 1 });
    expect(await metrics.registry.metrics()).toContain('uhlp_llm_tokens_total{app="a",model="scripted",kind="completion"} 1');
  });
});
