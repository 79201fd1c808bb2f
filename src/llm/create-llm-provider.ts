/**
 * The core's LLM provider from its configuration: an OpenAI-compatible server
 * when a base URL is set, else scripted answers from a file, else a scripted
 * provider with no answers (every call fails UHLP_LLM_NO_SCRIPTED_ANSWER:
 * offline by default, never a surprise bill); app model names mapped to the
 * server's (UHLP_LLM_MODELS) either way.
 */
import type { LlmConfig } from '../config.js';
import { UhlpError } from '../shared/errors.js';
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
  if (llm.scriptFile !== undefined) {
    const file = llm.scriptFile;
    // A start-up setting: the message names the setting, and the core does not start (exit 64).
    return loadScriptedProvider(file).catch((error: Error) => {
      throw new UhlpError('UHLP_CONFIG_INVALID', `${llm.scriptFileSetting ?? 'UHLP_LLM_SCRIPT_FILE'} names ${file}: ${error.message}`, { name: llm.scriptFileSetting ?? 'UHLP_LLM_SCRIPT_FILE', value: file }, { cause: error });
    });
  }
  return createScriptedProvider({ entries: [] });
}
