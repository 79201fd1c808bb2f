/**
 * The csjs runner's executor: runs the published bundle the core resolved for
 * the component (`context.taskDetails.cs`) in a V8 isolate. A bundle is
 * fetched once per runner through the core (`core.fn.bundle`, only bundles of
 * the execution's own app), checked against its sha256, read as the canonical
 * tar and its manifest validated again; then it stays compiled in warm
 * isolates. The activation's log lines go to the core at its end
 * (`core.fn.log`), where `uhlp fn logs <activation>` reads them.
 */
import { UhlpError } from '../../shared/errors.js';
import { activationContext, concurrencyKey, type CsTarget } from '../../contract/cs-bundle/activation-context.js';
import { openBundle } from '../../contract/cs-bundle/function-bundle.js';
import type { VerifiedBundle } from '../../contract/cs-bundle/function-bundle.js';
import { bundleStackPrefix, IsolateRuntime, logsOf } from './isolate-runtime.js';
import { scriptPlace } from '../kit/script-stack.js';
import { resultOfActivation } from './cs-result.js';
import type { CsLogLine } from './cs-host.js';
import type { Executor } from '../kit/executor.js';
import { mcpCsBackend } from './mcp-cs-backend.js';
import { errorResult } from '../kit/script-result.js';
import { ExecuteBadRequestError } from '../../shared/runner-errors.js';
import type { ToolsClient } from '../kit/tools-client.js';

export interface CsjsExecutorOptions {
  /** @defaultValue a new IsolateRuntime */
  readonly runtime?: IsolateRuntime;
  /** Verified bundles kept in memory. @defaultValue 256 */
  readonly maxBundles?: number;
}

/** Time kept between the activation's deadline and the pool's own timeout, so the runner answers before the core gives up. */
const DEADLINE_MARGIN_MS = 50;

export function createCsjsExecutor(options: CsjsExecutorOptions = {}): Executor {
  const runtime = options.runtime ?? new IsolateRuntime();
  const bundles = new BundleCache(options.maxBundles ?? 256);

  return async (request, tools) => {
    const task = request.context.taskDetails;
    const target = csTarget(task?.cs);
    if (task === undefined || target === undefined) {
      return errorResult(new ExecuteBadRequestError('context.taskDetails.cs must name a resolved cs-js bundle (tenant, sha256): this runner runs only cs components'));
    }
    if (target.tenant !== request.context.appId) return errorResult(new ExecuteBadRequestError('context.taskDetails.cs.tenant is not the execution\'s app'));
    const bundle = await bundles.get(target, tools);
    const started = Date.now();
    const poolTimeout = task.timeoutMs ?? bundle.manifest.limits.timeoutMs + DEADLINE_MARGIN_MS;
    const deadlineMs = started + Math.max(1, Math.min(bundle.manifest.limits.timeoutMs, poolTimeout - DEADLINE_MARGIN_MS));
    const ctx = activationContext({
      activationId: request.requestId,
      deadlineMs,
      target,
      trigger: request.requestData.source,
      ...(request.context.userInfo !== undefined ? { user: request.context.userInfo } : {}),
    });
    let logs: CsLogLine[] = [];
    try {
      const outcome = await runtime.run({
        concurrencyKey: concurrencyKey(target),
        bundle,
        eventJson: JSON.stringify(request.requestData),
        ctxJson: JSON.stringify(ctx),
        deadlineMs,
        backend: mcpCsBackend(tools),
      });
      logs = outcome.logs;
      return resultOfActivation(outcome.result, scriptPlace([bundleStackPrefix(bundle.sha256)]));
    } catch (error) {
      logs = logsOf(error) ?? [];
      throw error;
    } finally {
      if (logs.length > 0) await tools.call('core.fn.log', { lines: logs }).catch(() => undefined);
    }
  };
}

function csTarget(value: unknown): CsTarget | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const cs = value as Record<string, unknown>;
  if (typeof cs['tenant'] !== 'string' || typeof cs['sha256'] !== 'string' || !/^[0-9a-f]{64}$/.test(cs['sha256'])) return undefined;
  return {
    tenant: cs['tenant'],
    sha256: cs['sha256'],
    namespace: typeof cs['namespace'] === 'string' ? cs['namespace'] : '',
    function: typeof cs['function'] === 'string' ? cs['function'] : '',
    version: typeof cs['version'] === 'number' ? cs['version'] : 0,
    ...(typeof cs['ref'] === 'string' ? { ref: cs['ref'] } : {}),
  };
}

/** Verified bundles by tenant and sha256; concurrent first calls share one fetch. */
class BundleCache {
  private readonly entries = new Map<string, Promise<VerifiedBundle>>();

  constructor(private readonly max: number) {}

  get(target: CsTarget, tools: ToolsClient): Promise<VerifiedBundle> {
    const key = `${target.tenant}\0${target.sha256}`;
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = fetchBundle(target.sha256, tools);
      this.entries.set(key, entry);
      // A failed fetch is not kept: the next call tries again.
      entry.catch(() => this.entries.delete(key));
      if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as string);
    } else {
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry;
  }
}

async function fetchBundle(sha256: string, tools: ToolsClient): Promise<VerifiedBundle> {
  const answer = await tools.call('core.fn.bundle', { sha256 });
  if (typeof answer['bundle'] !== 'string') throw new UhlpError('UHLP_FN_BUNDLE_INTEGRITY', 'core.fn.bundle answered no bundle');
  return openBundle(sha256, Buffer.from(answer['bundle'], 'base64'));
}
