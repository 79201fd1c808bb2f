/**
 * One app view rendered the MCP Apps way: the console calls the tool, reads
 * the `ui://` resource it links, and shows it in a double-nested iframe: the
 * sandbox proxy on the sandbox origin (`allow-scripts allow-same-origin`, on
 * an origin that is not the console's), which holds the view in a frame of
 * its own with an opaque origin. The proxy's page carries the CSP the
 * resource declares (the core sets it from the app's definition).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { ViewBridge, type CallToolResult, type ReadResourceResult, type ViewTool } from '../mcp-host.js';
import { ErrorBox, Loading } from './common.js';

/** The outer frame's sandbox, as the extension requires of the proxy. */
export const PROXY_SANDBOX = 'allow-scripts allow-same-origin';

export function ViewHost({ app, tool, args, sandboxOrigin, onClose }: { app: string; tool: ViewTool; args: Record<string, unknown>; sandboxOrigin: string; onClose: () => void }) {
  const frame = useRef<HTMLIFrameElement>(null);
  const [error, setError] = useState<unknown>(undefined);
  const [ready, setReady] = useState<{ result: CallToolResult; resource: ReadResourceResult['contents'][number] } | undefined>(undefined);
  const [log, setLog] = useState<string[]>([]);
  const uri = tool._meta?.ui?.resourceUri;

  useEffect(() => {
    let live = true;
    (async () => {
      const result = await api<CallToolResult>(`/views/${encodeURIComponent(app)}/tools/call`, { method: 'POST', body: { name: tool.name, arguments: args, caller: 'host' } });
      if (uri === undefined) throw new Error(`${tool.name} links no ui:// resource`);
      const read = await api<ReadResourceResult>(`/views/${encodeURIComponent(app)}/resources/read`, { method: 'POST', body: { uri } });
      const resource = read.contents[0];
      if (resource === undefined) throw new Error(`${uri} has no content`);
      if (live) setReady({ result, resource });
    })().catch((failure: unknown) => live && setError(failure));
    return () => {
      live = false;
    };
  }, [app, tool.name, JSON.stringify(args)]);

  useEffect(() => {
    const element = frame.current;
    if (ready === undefined || element === null) return;
    const bridge = new ViewBridge({
      frame: element,
      sandboxOrigin,
      tool,
      toolInput: args,
      toolResult: ready.result,
      resource: ready.resource,
      callTool: (name, toolArgs) => api<CallToolResult>(`/views/${encodeURIComponent(app)}/tools/call`, { method: 'POST', body: { name, arguments: toolArgs, caller: 'view' } }),
      readResource: (resourceUri) => api<ReadResourceResult>(`/views/${encodeURIComponent(app)}/resources/read`, { method: 'POST', body: { uri: resourceUri } }),
      onSize: (height) => {
        element.style.height = `${height}px`;
      },
      onLog: (line) => setLog((lines) => [...lines.slice(-49), line]),
    });
    // Set only once the bridge listens: the proxy announces itself as soon as it loads.
    element.src = `${sandboxOrigin}/sandbox/sandbox.html?app=${encodeURIComponent(app)}&uri=${encodeURIComponent(uri ?? '')}`;
    return () => void bridge.teardown('closed');
  }, [ready]);

  return (
    <div class={`view-host${ready?.resource._meta?.ui?.prefersBorder === false ? '' : ' view-border'}`} data-app={app} data-tool={tool.name}>
      <div class="card-head">
        <h3>
          {app} · {tool.name} <span class="muted">{uri}</span>
        </h3>
        <button type="button" class="button button-plain" onClick={onClose}>
          Close view
        </button>
      </div>
      <ErrorBox error={error} />
      {ready === undefined && error === undefined ? <Loading /> : null}
      {ready !== undefined ? (
        <iframe ref={frame} class="view-frame" title={`${app} view ${uri ?? ''}`} sandbox={PROXY_SANDBOX} allow="" referrerpolicy="origin" />
      ) : null}
      {log.length > 0 ? (
        <details>
          <summary>View log ({log.length})</summary>
          <pre class="json">{log.join('\n')}</pre>
        </details>
      ) : null}
    </div>
  );
}
