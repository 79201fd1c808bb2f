/**
 * The core's LLM provider from its configuration: an OpenAI-compatible server
 * when a base URL is set, else scripted answers from a file, else a scripted
 * provider with no answers (every call fails UHLP_LLM_NO_SCRIPTED_ANSWER:
 * offline by default, never a surprise bill); app model names mapped to the
 * server's (UHLP_LLM_MODELS) either way.
 */
import type { LlmConfig } from '../config.js';
import type { LlmProvider } from './llm-provider.js';
import { withModelMap } from './model-map.js';
import { createOpenAiCompatibleProvider } from './openai-compatible-provider.js';
import { createScriptedProvider, loadScriptedProvider } from './scripted-provider.js';

export async function createLlmProvider(llm: LlmConfig): Promise<LlmProvider> {
  return withModelMap(await createBaseLlmProvider(llm), llm.models);
}

async function createBaseLlmProvider(llm: LlmConfig): Promise<LlmProvider> {
  if (llm.baseUrl !== undefined) {
    return createOpenAiCompatibleProvider({
      baseUrl: llm.baseUrl,
      ...(llm.apiKey !== undefined ? { apiKey: llm.apiKey } : {}),
      ...(llm.model !== undefined ? { model: llm.model } : {}),
      stream: llm.stream,
      structuredOutput: llm.structuredOutput,
      timeoutMs: llm.timeoutMs,
      maxRetries: llm.maxRetries,
    });
  }
  if (llm.scriptFile !== undefined) return loadScriptedProvider(llm.scriptFile);
  return createScriptedProvider({ entries: [] });
}
