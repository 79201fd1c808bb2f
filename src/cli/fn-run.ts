/**
 * `uhlp fn run` on a laptop: the same isolate engine, the same `cs` guard and
 * the same result mapping as the csjs runner, with local backends: kv in
 * memory (or in a Redis given by `--kv-endpoint`, under the tenant's namespace
 * exactly as the core keeps it), codeq publishes recorded and printed, and the
 * network reached only through the guarded fetch, only for the manifest's
 * `http.allowHosts` (none: egress blocked), private addresses refused.
 */
import { randomUUID } from 'node:crypto';
import { guardedFetch, type LookupAll } from '../net/guarded-fetch.js';
import { namespacedKey } from '../mcp/tools/kv-tools.js';
import type { KvStore } from '../mcp/kv-store.js';
import type { ScriptResult } from '../runners/kit/script-result.js';
import { activationContext, concurrencyKey, type CsTarget } from '../contract/cs-bundle/activation-context.js';
import type { CsBackend, CsLogLine } from '../runners/csjs/cs-host.js';
import { resultOfActivation } from '../runners/csjs/cs-result.js';
import type { VerifiedBundle } from '../contract/cs-bundle/function-bundle.js';
import { bundleStackPrefix, IsolateRuntime, logsOf } from '../runners/csjs/isolate-runtime.js';
import { scriptPlace } from '../runners/kit/script-stack.js';
import { resultFromThrown } from '../runners/kit/script-result.js';

export interface LocalRunOptions {
  readonly bundle: VerifiedBundle;
  readonly event: unknown;
  /** The tenant (app) kv keys are kept under. @defaultValue `local` */
  readonly tenant?: string;
  /** Where cs.kv goes. @defaultValue a fresh in-memory map */
  readonly kv?: KvStore;
  /** @defaultValue a runtime of its own, disposed at the end */
  readonly runtime?: IsolateRuntime;
  /** DNS for the guarded fetch (tests). @defaultValue the system resolver */
  readonly lookup?: LookupAll;
  /** Where the function names itself in ctx. */
  readonly target?: Partial<CsTarget>;
}

export interface LocalRunOutput {
  readonly activationId: string;
  /** What the served component would answer: the /execute result. */
  readonly result: ScriptResult;
  readonly logs: CsLogLine[];
  readonly published: Array<{ topic: string; payload: unknown; messageId: string }>;
}

/** A kv of one process, with expiry; the default of `uhlp fn run`. */
export function memoryKv(now: () => number = Date.now): KvStore {
  const entries = new Map<string, { value: string; expiresAt: number }>();
  const live = (key: string): { value: string; expiresAt: number } | undefined => {
    const entry = entries.get(key);
    if (entry !== undefined && entry.expiresAt <= now()) entries.delete(key);
    return entries.get(key);
  };
  return {
    kvGet: async (key) => live(key)?.value,
    kvSet: async (key, value, options = {}) => void entries.set(key, { value, expiresAt: options.ttlMs === undefined ? Infinity : now() + options.ttlMs }),
    kvDelete: async (key) => live(key) !== undefined && entries.delete(key),
  };
}

export async function runLocal(options: LocalRunOptions): Promise<LocalRunOutput> {
  const { bundle } = options;
  const tenant = options.tenant ?? 'local';
  const kv = options.kv ?? memoryKv();
  const runtime = options.runtime ?? new IsolateRuntime();
  const published: LocalRunOutput['published'] = [];
  const backend: CsBackend = {
    async kvGet(key) {
      const raw = await kv.kvGet(namespacedKey(tenant, key));
      return raw === undefined ? null : (JSON.parse(raw) as unknown);
    },
    async kvSet(key, value, ttlSeconds) {
      await kv.kvSet(namespacedKey(tenant, key), JSON.stringify(value ?? null), ttlSeconds !== undefined ? { ttlMs: ttlSeconds * 1000 } : {});
    },
    kvDel: (key) => kv.kvDelete(namespacedKey(tenant, key)),
    async publish(topic, payload) {
      const messageId = `local-${published.length + 1}`;
      published.push({ topic, payload, messageId });
      return { messageId };
    },
    async fetch(request) {
      const response = await guardedFetch(
        { url: request.url, method: request.method, headers: request.headers, ...(request.body !== undefined ? { body: request.body } : {}) },
        { allowHosts: request.allowHosts, methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'], timeoutMs: request.timeoutMs },
        options.lookup !== undefined ? { lookup: options.lookup } : {},
      );
      return { status: response.status, headers: response.headers, body: response.body.toString('base64'), isBase64Encoded: true };
    },
  };
  const target: CsTarget = { tenant, namespace: '', function: '', version: 0, sha256: bundle.sha256, ...options.target };
  const activationId = randomUUID();
  const deadlineMs = Date.now() + bundle.manifest.limits.timeoutMs;
  const ctx = activationContext({ activationId, deadlineMs, target, trigger: 'local' });
  try {
    const outcome = await runtime.run({
      concurrencyKey: concurrencyKey(target),
      bundle,
      eventJson: JSON.stringify(options.event ?? null),
      ctxJson: JSON.stringify(ctx),
      deadlineMs,
      backend,
    });
    return { activationId, result: resultOfActivation(outcome.result, scriptPlace([bundleStackPrefix(bundle.sha256)])), logs: outcome.logs, published };
  } catch (error) {
    return { activationId, result: resultFromThrown(error), logs: logsOf(error) ?? [], published };
  } finally {
    if (options.runtime === undefined) runtime.dispose();
  }
}
