/**
 * The sandbox proxy of an app view (MCP Apps, SEP-1865): the outer iframe,
 * served from the views' own origin (never the console's), that holds the view
 * in an inner iframe and relays JSON-RPC messages between the console and the
 * view, and nothing else.
 *
 * - It refuses to run unless it is framed and `window.top` is out of its reach.
 * - The console's origin is the one that framed it (document.referrer, checked
 *   against location.ancestorOrigins where the browser has it); messages from
 *   the parent are taken only from that origin, and messages to it are sent
 *   only to that origin.
 * - The view is an `srcdoc` document in a frame sandboxed with scripts and
 *   forms only: an opaque origin of its own, so it reaches neither this page
 *   nor another view's, and it inherits this page's Content-Security-Policy
 *   (the one its resource declared, set by the core on this page's answer).
 *   The host's `sandbox` override is ignored: the policy is this page's.
 * - A message from any other window (another view, another page) is dropped
 *   and logged; `ui/notifications/sandbox-*` messages are never relayed.
 */
const VIEW_SANDBOX = 'allow-scripts allow-forms';
const PROXY_READY = 'ui/notifications/sandbox-proxy-ready';
const RESOURCE_READY = 'ui/notifications/sandbox-resource-ready';

if (window.self === window.top) throw new Error('the uhlp view sandbox runs only inside the console');
if (document.referrer === '') throw new Error('the uhlp view sandbox cannot tell which console framed it (no referrer)');
const HOST_ORIGIN = new URL(document.referrer).origin;
const ancestors = (location as Location & { ancestorOrigins?: DOMStringList }).ancestorOrigins;
if (ancestors !== undefined && ancestors.length > 0 && ancestors[0] !== HOST_ORIGIN) throw new Error('the uhlp view sandbox was framed by another page than its referrer');

// Self-test: the console's window must be out of reach (another origin); if it is not, nothing runs here.
let topReachable = true;
try {
  void window.top!.document.title;
} catch {
  topReachable = false;
}
if (topReachable) throw new Error('the uhlp view sandbox is not isolated from the console (window.top is reachable)');

const inner = document.createElement('iframe');
inner.setAttribute('sandbox', VIEW_SANDBOX);
inner.setAttribute('title', 'app view');
// No permission-policy feature is granted to views.
inner.setAttribute('allow', '');
inner.style.width = '100%';
inner.style.height = '100%';
inner.style.border = '0';
document.documentElement.style.height = '100%';
document.body.style.margin = '0';
document.body.style.height = '100%';
document.body.appendChild(inner);

let rejected = 0;

function isRpc(data: unknown): data is { jsonrpc: '2.0'; method?: unknown } {
  return typeof data === 'object' && data !== null && (data as { jsonrpc?: unknown }).jsonrpc === '2.0';
}

function isSandboxMethod(data: { method?: unknown }): boolean {
  return typeof data.method === 'string' && data.method.startsWith('ui/notifications/sandbox-');
}

window.addEventListener('message', (event: MessageEvent) => {
  if (event.source === window.parent && event.origin === HOST_ORIGIN) {
    if (!isRpc(event.data)) return;
    if (event.data.method === RESOURCE_READY) {
      const params = (event.data as { params?: { html?: unknown } }).params;
      if (typeof params?.html === 'string') inner.srcdoc = params.html;
      return;
    }
    if (isSandboxMethod(event.data)) return;
    // The view's origin is opaque: "*" is the only target a message to it can name.
    inner.contentWindow?.postMessage(event.data, '*');
    return;
  }
  if (event.source !== null && event.source === inner.contentWindow) {
    if (!isRpc(event.data) || isSandboxMethod(event.data)) return;
    window.parent.postMessage(event.data, HOST_ORIGIN);
    return;
  }
  rejected += 1;
  document.body.dataset['rejectedMessages'] = String(rejected);
  console.error(`[uhlp sandbox] rejected a message from an unknown source (origin ${event.origin || 'none'})`);
});

window.parent.postMessage({ jsonrpc: '2.0', method: PROXY_READY, params: {} }, HOST_ORIGIN);
