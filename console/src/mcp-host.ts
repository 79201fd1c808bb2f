/**
 * The console as an MCP Apps host (SEP-1865) for one view: it talks JSON-RPC
 * over postMessage with the view's sandbox proxy (an iframe on the sandbox
 * origin), answers `ui/initialize`, sends the tool's input and result once the
 * view is initialized, passes the view's `tools/call` and `resources/read` to
 * the core (which runs them as the view's app, by the extension's rules), and
 * tears the view down on request.
 *
 * A message is taken only from this view's proxy window and only with the
 * sandbox origin; anything else (another view, another page, the view itself
 * posting past its proxy) is dropped and counted (`data-rejected-messages` on
 * the document body) and logged.
 */
export interface ViewTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: unknown;
  readonly _meta?: { ui?: { resourceUri?: string; visibility?: string[] } };
}

export interface CallToolResult {
  readonly content: Array<{ type: string; text?: string }>;
  readonly structuredContent?: unknown;
  readonly isError?: boolean;
}

export interface ReadResourceResult {
  readonly contents: Array<{ uri: string; mimeType: string; text?: string; _meta?: { ui?: { csp?: Record<string, string[]>; permissions?: Record<string, unknown>; prefersBorder?: boolean } } }>;
}

export interface ViewBridgeOptions {
  readonly frame: HTMLIFrameElement;
  readonly sandboxOrigin: string;
  readonly tool: ViewTool;
  readonly toolInput: Record<string, unknown>;
  readonly toolResult: CallToolResult;
  readonly resource: ReadResourceResult['contents'][number];
  readonly callTool: (name: string, args: Record<string, unknown>) => Promise<CallToolResult>;
  readonly readResource: (uri: string) => Promise<ReadResourceResult>;
  readonly onSize: (height: number) => void;
  readonly onLog: (line: string) => void;
}

interface RpcMessage {
  readonly jsonrpc: '2.0';
  readonly id?: string | number;
  readonly method?: string;
  readonly params?: Record<string, unknown>;
  readonly result?: unknown;
  readonly error?: unknown;
}

export const PROTOCOL_VERSION = '2026-01-26';
/** Tallest a view may make itself, px. */
const MAX_HEIGHT = 1600;
let rejected = 0;

function countRejected(origin: string): void {
  rejected += 1;
  document.body.dataset['rejectedMessages'] = String(rejected);
  console.warn(`[uhlp console] rejected a message from an unknown source (origin ${origin || 'none'})`);
}

/** Every bridge on the page: a message no bridge owns is rejected once, here. */
const bridges = new Set<ViewBridge>();
window.addEventListener('message', (event: MessageEvent) => {
  for (const bridge of bridges) if (bridge.owns(event)) return bridge.receive(event.data as unknown);
  if (typeof event.data === 'object' && event.data !== null && (event.data as { jsonrpc?: unknown }).jsonrpc === '2.0') countRejected(event.origin);
});

export class ViewBridge {
  private initialized = false;
  private nextId = 1;
  private readonly pending = new Map<number, (message: RpcMessage) => void>();

  constructor(private readonly options: ViewBridgeOptions) {
    bridges.add(this);
  }

  /** Whether a message event is this view's: from its proxy's window, on the sandbox origin. */
  owns(event: MessageEvent): boolean {
    return event.source !== null && event.source === this.options.frame.contentWindow && event.origin === this.options.sandboxOrigin;
  }

  receive(data: unknown): void {
    if (typeof data !== 'object' || data === null || (data as RpcMessage).jsonrpc !== '2.0') return;
    const message = data as RpcMessage;
    if (message.method === undefined) {
      // An answer to one of the host's requests (teardown).
      if (typeof message.id === 'number') this.pending.get(message.id)?.(message);
      return;
    }
    if (message.id === undefined) this.notification(message.method, message.params ?? {});
    else void this.request(message.id, message.method, message.params ?? {});
  }

  /** Asks the view to tear down (waiting a moment for its answer), then forgets it. */
  async teardown(reason: string): Promise<void> {
    if (this.initialized) {
      const id = this.nextId++;
      await Promise.race([
        new Promise<void>((resolve) => {
          this.pending.set(id, () => resolve());
          this.post({ jsonrpc: '2.0', id, method: 'ui/resource-teardown', params: { reason } });
        }),
        new Promise<void>((resolve) => setTimeout(resolve, 1000)),
      ]);
    }
    bridges.delete(this);
  }

  private notification(method: string, params: Record<string, unknown>): void {
    switch (method) {
      case 'ui/notifications/sandbox-proxy-ready': {
        const ui = this.options.resource._meta?.ui;
        // The proxy's page already carries the declared CSP (the core set it); it is passed on as the extension has it.
        this.post({ jsonrpc: '2.0', method: 'ui/notifications/sandbox-resource-ready', params: { html: this.options.resource.text ?? '', csp: ui?.csp ?? {}, permissions: {} } });
        return;
      }
      case 'ui/notifications/initialized':
        if (this.initialized) return;
        this.initialized = true;
        this.post({ jsonrpc: '2.0', method: 'ui/notifications/tool-input', params: { arguments: this.options.toolInput } });
        this.post({ jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: this.options.toolResult as unknown as Record<string, unknown> });
        return;
      case 'ui/notifications/size-changed': {
        const height = Number(params['height']);
        if (Number.isFinite(height) && height > 0) this.options.onSize(Math.min(MAX_HEIGHT, Math.ceil(height)));
        return;
      }
      case 'notifications/message':
        this.options.onLog(`${String(params['level'] ?? 'info')}: ${typeof params['data'] === 'string' ? params['data'] : JSON.stringify(params['data'])}`.slice(0, 2000));
        return;
      default:
        return;
    }
  }

  private async request(id: string | number, method: string, params: Record<string, unknown>): Promise<void> {
    const fail = (code: number, message: string): void => this.post({ jsonrpc: '2.0', id, error: { code, message } });
    try {
      switch (method) {
        case 'ui/initialize': {
          const ui = this.options.resource._meta?.ui;
          return this.post({
            jsonrpc: '2.0',
            id,
            result: {
              protocolVersion: PROTOCOL_VERSION,
              hostInfo: { name: 'uhlp-console', version: '1' },
              hostCapabilities: { serverTools: {}, serverResources: {}, logging: {}, sandbox: { permissions: {}, csp: ui?.csp ?? {} } },
              hostContext: {
                toolInfo: { tool: this.options.tool },
                theme: 'light',
                displayMode: 'inline',
                availableDisplayModes: ['inline'],
                containerDimensions: { maxHeight: MAX_HEIGHT },
                locale: navigator.language,
                timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
                platform: 'web',
              },
            },
          });
        }
        case 'ping':
          return this.post({ jsonrpc: '2.0', id, result: {} });
        case 'tools/call': {
          if (!this.initialized) return fail(-32600, 'the view is not initialized');
          const name = params['name'];
          const args = params['arguments'] ?? {};
          if (typeof name !== 'string' || typeof args !== 'object' || args === null || Array.isArray(args)) return fail(-32602, 'tools/call takes a name and an arguments object');
          return this.post({ jsonrpc: '2.0', id, result: await this.options.callTool(name, args as Record<string, unknown>) });
        }
        case 'resources/read': {
          if (!this.initialized) return fail(-32600, 'the view is not initialized');
          if (typeof params['uri'] !== 'string') return fail(-32602, 'resources/read takes a uri');
          return this.post({ jsonrpc: '2.0', id, result: await this.options.readResource(params['uri']) });
        }
        case 'ui/request-display-mode':
          return this.post({ jsonrpc: '2.0', id, result: { mode: 'inline' } });
        case 'ui/open-link':
          return fail(-32000, 'Policy violation: the console opens no links from views');
        case 'ui/message':
        case 'ui/update-model-context':
          return fail(-32000, 'Message sending denied: the console has no conversation');
        default:
          return fail(-32601, `Method not found: ${method.slice(0, 64)}`);
      }
    } catch (error) {
      fail(-32000, error instanceof Error ? error.message : String(error));
    }
  }

  private post(message: RpcMessage): void {
    this.options.frame.contentWindow?.postMessage(message, this.options.sandboxOrigin);
  }
}
