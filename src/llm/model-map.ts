/**
 * Apps name the models they may use in their llm capability (`models: [small, large]`);
 * the operator decides what those names are on the server the core talks to
 * (`UHLP_LLM_MODELS="small=llama3.2:3b,large=qwen2.5:14b"`). So an app moves
 * from the scripted provider to Ollama, vLLM or a hosted model without an edit,
 * and its metrics and evidence keep the names the app knows.
 */
import type { LlmProvider } from './llm-provider.js';

/** A provider that sends the server's name for each model the map names, and every other name as it is. */
export function withModelMap(provider: LlmProvider, map: Readonly<Record<string, string>>): LlmProvider {
  if (Object.keys(map).length === 0) return provider;
  return {
    kind: provider.kind,
    ...(provider.defaultModel !== undefined ? { defaultModel: provider.defaultModel } : {}),
    generate(request) {
      const model = request.model ?? provider.defaultModel;
      const mapped = model !== undefined ? map[model] : undefined;
      return provider.generate(mapped !== undefined ? { ...request, model: mapped } : request);
    },
  };
}

/** `a=b,c=d` into a map; undefined for a pair that is not `name=name` (config.ts names the variable). */
export function parseModelMap(raw: string): Record<string, string> | undefined {
  const map: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const pair of raw.split(',').map((p) => p.trim()).filter(Boolean)) {
    const match = /^([^=\s]+)=([^=\s]+)$/.exec(pair);
    if (!match) return undefined;
    map[match[1]!] = match[2]!;
  }
  return map;
}
