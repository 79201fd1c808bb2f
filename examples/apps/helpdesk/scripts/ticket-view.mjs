// The ticket view (ui://helpdesk/ticket): an HTML document generated per request, an MCP Apps view
// (SEP-1865). It speaks JSON-RPC with its host over postMessage, takes messages from its parent only,
// shows the ticket the tool answered (as text: a ticket's title is what a customer wrote), and calls
// ticket.escalate, a tool only the view may call.
const escape = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function ticketView(_event, ctx) {
  const company = escape(ctx.configuration.company ?? 'the helpdesk');
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Ticket</title>
<style>
  body { font: 14px system-ui, sans-serif; margin: 0; padding: 12px; color: #1b1f24; background: #ffffff; }
  h1 { font-size: 16px; margin: 0 0 8px; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 12px; margin: 0 0 12px; }
  dt { color: #555d66; font-weight: 600; }
  dd { margin: 0; overflow-wrap: anywhere; }
  button { font: inherit; padding: 6px 12px; border: 0; border-radius: 4px; background: #a4161a; color: #fff; cursor: pointer; }
  button[disabled] { background: #c9ced3; color: #3b4148; cursor: default; }
  .muted { color: #555d66; }
</style></head>
<body>
  <h1>Ticket at ${company}</h1>
  <p id="state" class="muted" role="status">Waiting for the ticket…</p>
  <dl id="ticket" hidden>
    <dt>Id</dt><dd id="id"></dd>
    <dt>Title</dt><dd id="title"></dd>
    <dt>Priority</dt><dd id="priority"></dd>
    <dt>Status</dt><dd id="status"></dd>
  </dl>
  <button id="escalate" type="button" disabled>Escalate</button>
<script>
(() => {
  let nextId = 1;
  const pending = new Map();
  let ticket;
  let rejected = 0;
  const post = (message) => window.parent.postMessage({ jsonrpc: '2.0', ...message }, '*');
  const request = (method, params) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    post({ id, method, params });
  });
  const show = (value) => {
    ticket = value;
    for (const key of ['id', 'title', 'priority', 'status']) document.getElementById(key).textContent = value[key] ?? '';
    document.getElementById('ticket').hidden = false;
    document.getElementById('state').textContent = 'Ticket ' + value.id;
    document.getElementById('escalate').disabled = value.status === 'escalated';
    post({ method: 'ui/notifications/size-changed', params: { width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight } });
  };
  window.addEventListener('message', (event) => {
    // Only the host (through the sandbox proxy, this frame's parent) speaks to the view.
    if (event.source !== window.parent) {
      rejected += 1;
      document.body.dataset.rejected = String(rejected);
      console.warn('[ticket view] ignoring a message from an unknown source');
      return;
    }
    const message = event.data;
    if (!message || message.jsonrpc !== '2.0') return;
    if (message.id !== undefined && pending.has(message.id) && message.method === undefined) {
      const { resolve, reject } = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) reject(new Error(message.error.message)); else resolve(message.result);
      return;
    }
    if (message.method === 'ui/notifications/tool-result' && message.params && message.params.structuredContent) show(message.params.structuredContent);
    if (message.method === 'ui/resource-teardown') post({ id: message.id, result: {} });
  });
  document.getElementById('escalate').addEventListener('click', async () => {
    document.getElementById('escalate').disabled = true;
    try {
      const result = await request('tools/call', { name: 'ticket.escalate', arguments: { id: ticket.id, title: ticket.title } });
      show({ ...ticket, ...result.structuredContent });
    } catch (error) {
      document.getElementById('state').textContent = 'Escalation refused: ' + error.message;
    }
  });
  request('ui/initialize', { appCapabilities: { availableDisplayModes: ['inline'] }, appInfo: { name: 'helpdesk-ticket', version: '1' }, protocolVersion: '2026-01-26' })
    .then(() => post({ method: 'ui/notifications/initialized', params: {} }));
})();
</script>
</body></html>`;
  return { statusCode: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body };
}
