/**
 * The model providers of apps that bring their own endpoint (spec.llm): one
 * per app, made when its definition loads, used for that app's calls only. The
 * key is read from the app's secrets on every attempt, so a rotated Secret is
 * used by the next call with no new provider, and a missing one fails the call
 * UHLP_SECRET_UNAVAILABLE before anything is sent. Connections go through the
 * address guard (guarded-llm-dispatcher.ts).
 */
import type { AppLlmSpec } from '../apps/schema/app-definition-schema.js';
import type { LookupAll } from '../net/address-guard.js';
import type { SecretStore } from '../secrets/secret-store.js';
import { UhlpError } from '../shared/errors.js';
import { guardedLlmDispatcher } from './guarded-llm-dispatcher.js';
import type { LlmProvider } from './llm-provider.js';
import { createOpenAiCompatibleProvider } from './openai-compatible-provider.js';

export interface AppLlmProvidersOptions {
  readonly secrets: SecretStore;
  /** UHLP_LLM_ALLOW_PRIVATE. @defaultValue [] */
  readonly allowPrivate?: readonly string[];
  /** The operator's settings the app's provider shares. */
  readonly timeoutMs?: number;
  readonly maxRetries?: number;
  readonly stream?: boolean;
  /** @defaultValue dns.lookup */
  readonly lookup?: LookupAll;
}

export interface AppLlmProviders {
  /** The app's own provider, or undefined when it uses the operator's. */
  forApp(appId: string): LlmProvider | undefined;
  /** The apps now loaded: providers are made for new or changed endpoints, dropped for apps gone. */
  update(apps: ReadonlyArray<{ readonly appId: string; readonly llm?: AppLlmSpec }>): void;
}

export function createAppLlmProviders(options: AppLlmProvidersOptions): AppLlmProviders {
  const providers = new Map<string, { readonly shape: string; readonly provider: LlmProvider; readonly close: () => void }>();

  const make = (appId: string, llm: AppLlmSpec) => {
    const { url, secret } = llm.endpoint;
    const base = new URL(url);
    const dispatcher = guardedLlmDispatcher(base, { ...(options.allowPrivate !== undefined ? { allowPrivate: options.allowPrivate } : {}), ...(options.lookup !== undefined ? { lookup: options.lookup } : {}) });
    const apiKey = (): string => {
      const value = options.secrets.ofApp(appId, secret.name, secret.key);
      if (value === undefined) {
        throw new UhlpError('UHLP_SECRET_UNAVAILABLE', `the app's model endpoint needs secret "${secret.name}" key "${secret.key}", which the app does not have now`, { secret: secret.name, key: secret.key });
      }
      return value.value;
    };
    const provider = createOpenAiCompatibleProvider({
      baseUrl: url,
      apiKey,
      dispatcher,
      ...(llm.model !== undefined ? { model: llm.model } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
      ...(options.stream !== undefined ? { stream: options.stream } : {}),
    });
    return { shape: JSON.stringify(llm), provider, close: () => void dispatcher.close().catch(() => {}) };
  };

  return {
    forApp: (appId) => providers.get(appId)?.provider,
    update(apps) {
      const seen = new Set<string>();
      for (const { appId, llm } of apps) {
        if (llm === undefined) continue;
        seen.add(appId);
        const current = providers.get(appId);
        if (current?.shape === JSON.stringify(llm)) continue;
        current?.close();
        providers.set(appId, make(appId, llm));
      }
      for (const [appId, entry] of providers) {
        if (seen.has(appId)) continue;
        entry.close();
        providers.delete(appId);
      }
    },
  };
}
