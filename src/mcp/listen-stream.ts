/**
 * `subscriptions/listen` of the 2026-07-28 revision: one server-sent-event
 * stream per request that acknowledges the filter the core honors (only
 * `toolsListChanged`: the core has no prompts or resources), then sends
 * `notifications/tools/list_changed` whenever the grant's tool list changes (a
 * federated server's list did), each tagged with the subscription id (the
 * request's id). It ends with the request's result when the execution's token
 * ends or the core closes, and when the client goes away.
 */
import type { ExecutionGrant } from './mcp-token-service.js';

export const SUBSCRIPTION_ID_KEY = 'io.modelcontextprotocol/subscriptionId';

/** Told when the tool list of an app may have changed; answers how to stop telling. */
export type ToolsChangedWatch = (grant: ExecutionGrant, onChange: () => void) => () => void;

export interface ListenOptions {
  readonly id: string | number;
  readonly filter: Record<string, unknown> | undefined;
  readonly grant: ExecutionGrant;
  readonly watch: ToolsChangedWatch | undefined;
  readonly signal: AbortSignal;
  /** How often a comment line keeps the stream alive and the token is checked, ms. @defaultValue 15000 */
  readonly keepAliveMs?: number;
  readonly serverInfo: { readonly name: string; readonly version: string };
}

/** The SSE frames of one subscription, as they happen. */
export async function* listenFrames(options: ListenOptions): AsyncGenerator<string> {
  const meta = { [SUBSCRIPTION_ID_KEY]: options.id };
  const honored = options.filter?.['toolsListChanged'] === true ? { toolsListChanged: true } : {};
  yield frame({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: meta, notifications: honored } });

  let changed = false;
  let wake: (() => void) | undefined;
  const stop = honored.toolsListChanged === true ? options.watch?.(options.grant, () => {
    changed = true;
    wake?.();
  }) : undefined;
  const onAbort = (): void => wake?.();
  options.signal.addEventListener('abort', onAbort, { once: true });
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  let lastWrite = performance.now();
  try {
    while (!options.signal.aborted && !options.grant.ended) {
      await new Promise<void>((resolve) => {
        wake = resolve;
        const timer = setTimeout(resolve, Math.min(keepAliveMs, 1000));
        timer.unref();
      });
      wake = undefined;
      if (options.signal.aborted) return;
      if (changed) {
        changed = false;
        lastWrite = performance.now();
        yield frame({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: meta } });
      } else if (performance.now() - lastWrite >= keepAliveMs) {
        lastWrite = performance.now();
        yield ': keep-alive\n\n';
      }
    }
    // The token ended: the subscription ends gracefully, with its result.
    yield frame({
      jsonrpc: '2.0',
      id: options.id,
      result: { resultType: 'complete', _meta: { ...meta, 'io.modelcontextprotocol/serverInfo': options.serverInfo } },
    });
  } finally {
    stop?.();
    options.signal.removeEventListener('abort', onAbort);
  }
}

function frame(message: unknown): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}
