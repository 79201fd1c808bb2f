/**
 * One long-lived transport that carries every HTTP exchange of the core's MCP
 * endpoint to one SDK `Server`, built once at start-up. The SDK's own HTTP
 * entry builds a server and a transport per request; here each POST is handed
 * to the same connected server under an id of our own (so two clients that both
 * send `"id": 1` never meet in the server's request table) and the answer is
 * given back under the client's id.
 *
 * It extends the SDK's per-request transport only so that `Server.connect`
 * reads its classification and binds the server to the 2026-07-28 revision, as
 * the SDK's entry does; every exchange method is its own.
 */
import { PerRequestHTTPServerTransport, type JSONRPCMessage, type JSONRPCRequest } from '@modelcontextprotocol/server';

/** The classification `Server.connect` reads; undefined for a transport serving the 2025 era. */
type Classification = ConstructorParameters<typeof PerRequestHTTPServerTransport>[0]['classification'];

interface Pending {
  readonly clientId: string | number;
  resolve(message: JSONRPCMessage): void;
}

/** What one exchange hands the server besides the message: the caller, as the SDK's `authInfo`. */
export interface ExchangeExtra {
  readonly authInfo: { token: string; clientId: string; scopes: string[]; extra: Record<string, unknown> };
  readonly classification?: unknown;
}

export class ExchangeTransport extends PerRequestHTTPServerTransport {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private open = true;

  constructor(classification: Classification | undefined) {
    // A 2025-era server has no classification: its era comes from each `initialize`.
    super({ classification: classification as Classification, responseMode: 'json' });
  }

  override async start(): Promise<void> {
    // Connected once; nothing to open.
  }

  /**
   * Delivers one request to the server and resolves with its response under the
   * client's id; rejects when `signal` aborts (the server's handler is told too).
   */
  exchange(request: JSONRPCRequest, extra: ExchangeExtra, signal?: AbortSignal): Promise<JSONRPCMessage> {
    if (!this.open || this.onmessage === undefined) return Promise.reject(new Error('the MCP server is closed'));
    const id = this.nextId++;
    if (this.nextId > Number.MAX_SAFE_INTEGER) this.nextId = 1;
    return new Promise<JSONRPCMessage>((resolve, reject) => {
      const onAbort = (): void => {
        if (!this.pending.delete(id)) return;
        // The server stops the handler and sends nothing for a cancelled request.
        this.onmessage?.({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'client went away' } } as JSONRPCMessage, extra as never);
        reject(new Error('the client went away'));
      };
      this.pending.set(id, {
        clientId: request.id,
        resolve: (message) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(message);
        },
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      this.onmessage!({ ...request, id } as JSONRPCMessage, extra as never);
    });
  }

  /** Delivers a notification; the server answers nothing. */
  notify(message: JSONRPCMessage, extra: ExchangeExtra): void {
    this.onmessage?.(message, extra as never);
  }

  override async send(message: JSONRPCMessage): Promise<void> {
    const id = (message as { id?: unknown }).id;
    // Only responses come back: the core's tools send no notifications or requests of their own.
    if (typeof id !== 'number' || !('result' in message || 'error' in message)) return;
    const pending = this.pending.get(id);
    if (pending === undefined) return;
    this.pending.delete(id);
    pending.resolve({ ...message, id: pending.clientId } as JSONRPCMessage);
  }

  override async close(): Promise<void> {
    if (!this.open) return;
    this.open = false;
    for (const [id, pending] of this.pending) {
      this.pending.delete(id);
      pending.resolve({ jsonrpc: '2.0', id: pending.clientId, error: { code: -32603, message: 'the MCP server is closing' } } as JSONRPCMessage);
    }
    this.onclose?.();
  }
}
