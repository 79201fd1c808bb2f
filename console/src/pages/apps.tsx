/**
 * The apps: each app's revision, routes, components with the tools each may
 * call, pools, capabilities and views (its MCP Apps tools, which open a view
 * here); apps held back at an older revision because a newer one breaks them,
 * and definitions that did not load, each problem with its file, JSON path and
 * reason (shown as text: an app's error is the app author's to write).
 */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ErrorBox, JsonBlock, Loading, Section, useLoad } from '../components/common.js';
import { ViewHost } from '../components/view-host.js';
import type { ViewTool } from '../mcp-host.js';
import type { Problem } from '../types.js';

interface AppInfo {
  id: string;
  revision: string;
  deploymentMode: string;
  pathPrefix: string;
  hosts: string[];
  routes: Array<Record<string, unknown> & { kind: string; component: string }>;
  components: Array<{ id: string; handler: string; pool: string; runs: string; optimized: boolean; tools: Array<{ name: string; critical: boolean }> }>;
  pools: Array<{ name: string; runner: string; minWarm: number; maxSize: number }>;
  capabilities: Record<string, unknown>;
  ui: { resources: Array<{ uri: string; name: string }>; tools: Array<{ name: string; description: string; resourceUri?: string; visibility?: string[] }> };
}

interface AppsAnswer {
  revision: string;
  apps: AppInfo[];
  heldBack: Array<{ app: string; servingRevision: string; problems: Problem[] }>;
  problems: Problem[];
}

export function AppsPage({ sandboxOrigin, canAct }: { sandboxOrigin: string; canAct: boolean }) {
  const { data, error } = useLoad(() => api<AppsAnswer>('/apps'), [], 10_000);
  const views = useLoad(() => api<{ apps: Array<{ app: string; tools: ViewTool[] }> }>('/views'), []);
  // Views stay open side by side (each in its own sandbox) until closed.
  const [open, setOpen] = useState<Array<{ key: number; app: string; tool: ViewTool; args: Record<string, unknown> }>>([]);
  const [nextKey, setNextKey] = useState(1);
  if (error !== undefined) return <ErrorBox error={error} />;
  if (data === undefined) return <Loading />;
  return (
    <>
      {data.heldBack.length > 0 || data.problems.length > 0 ? (
        <Section title="Held back">
          {data.heldBack.map((held) => (
            <div class="held" data-app={held.app}>
              <h3>
                {held.app} <span class="muted">serves revision {held.servingRevision.slice(0, 12)}</span>
              </h3>
              <Problems problems={held.problems} />
            </div>
          ))}
          {data.problems.length > 0 ? (
            <div class="held">
              <h3>Definitions that did not load</h3>
              <Problems problems={data.problems} />
            </div>
          ) : null}
        </Section>
      ) : null}
      {open.map((view) => (
        <ViewHost key={view.key} app={view.app} tool={view.tool} args={view.args} sandboxOrigin={sandboxOrigin} onClose={() => setOpen((views) => views.filter((other) => other.key !== view.key))} />
      ))}
      {data.apps.map((app) => (
        <Section title={app.id} key={app.id}>
          <dl class="facts">
            <dt>Revision</dt>
            <dd class="mono">{app.revision}</dd>
            <dt>Mode</dt>
            <dd>{app.deploymentMode}</dd>
            <dt>Path prefix</dt>
            <dd class="mono">{app.pathPrefix}</dd>
            <dt>Hosts</dt>
            <dd>{app.hosts.join(', ') || '–'}</dd>
          </dl>
          <table>
            <caption>Routes</caption>
            <thead>
              <tr>
                <th scope="col">Source</th>
                <th scope="col">Route</th>
                <th scope="col">Component</th>
              </tr>
            </thead>
            <tbody>
              {app.routes.map((route) => (
                <tr>
                  <td>{route.kind}</td>
                  <td class="mono">{route.kind === 'http' ? `${String(route['method'])} ${String(route['path'])}` : String(route['name'] ?? route['id'] ?? route['schedule'] ?? '')}</td>
                  <td>{route.component}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <table>
            <caption>Components</caption>
            <thead>
              <tr>
                <th scope="col">Component</th>
                <th scope="col">Handler</th>
                <th scope="col">Pool</th>
                <th scope="col">Runs</th>
                <th scope="col">Tools it may call</th>
              </tr>
            </thead>
            <tbody>
              {app.components.map((component) => (
                <tr>
                  <td>
                    {component.id}
                    {component.optimized ? <span class="badge badge-shadow"> optimized</span> : null}
                  </td>
                  <td>{component.handler}</td>
                  <td>{component.pool}</td>
                  <td class="mono">{component.runs}</td>
                  <td>
                    {component.tools.length === 0 ? <span class="muted">none</span> : null}
                    {component.tools.map((tool) => (
                      <code class={`grant${tool.critical ? ' critical' : ''}`}>{tool.name}</code>
                    ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <details>
            <summary>Capabilities and pools</summary>
            <JsonBlock value={{ capabilities: app.capabilities, pools: app.pools }} label={`${app.id} capabilities`} />
          </details>
          {(views.data?.apps.find((entry) => entry.app === app.id)?.tools ?? []).length > 0 ? (
            <AppViews app={app.id} tools={views.data!.apps.find((entry) => entry.app === app.id)!.tools} canAct={canAct} onOpen={(tool, args) => {
                setOpen((views) => [...views, { key: nextKey, app: app.id, tool, args }]);
                setNextKey((key) => key + 1);
              }} />
          ) : null}
        </Section>
      ))}
    </>
  );
}

function Problems({ problems }: { problems: Problem[] }) {
  return (
    <table class="problems">
      <thead>
        <tr>
          <th scope="col">File</th>
          <th scope="col">JSON path</th>
          <th scope="col">Reason</th>
        </tr>
      </thead>
      <tbody>
        {problems.map((problem) => (
          <tr>
            <td class="mono">{problem.file}</td>
            <td class="mono">{problem.path}</td>
            <td class="reason">{problem.reason}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function AppViews({ app, tools, canAct, onOpen }: { app: string; tools: ViewTool[]; canAct: boolean; onOpen: (tool: ViewTool, args: Record<string, unknown>) => void }) {
  const withViews = tools.filter((tool) => tool._meta?.ui?.resourceUri !== undefined && (tool._meta.ui.visibility ?? ['model', 'app']).includes('model'));
  return (
    <div class="views">
      <h3>Views</h3>
      {withViews.map((tool) => (
        <ViewLauncher app={app} tool={tool} canAct={canAct} onOpen={onOpen} />
      ))}
    </div>
  );
}

function ViewLauncher({ app, tool, canAct, onOpen }: { app: string; tool: ViewTool; canAct: boolean; onOpen: (tool: ViewTool, args: Record<string, unknown>) => void }) {
  const [text, setText] = useState('{}');
  const [error, setError] = useState<string | undefined>(undefined);
  const id = `args-${app}-${tool.name}`;
  return (
    <form
      class="launcher"
      onSubmit={(event) => {
        event.preventDefault();
        try {
          const args = JSON.parse(text) as unknown;
          if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new Error('the arguments must be a JSON object');
          setError(undefined);
          onOpen(tool, args as Record<string, unknown>);
        } catch (failure) {
          setError((failure as Error).message);
        }
      }}
    >
      <p>
        <code>{tool.name}</code> {tool.description} <span class="muted">→ {tool._meta?.ui?.resourceUri}</span>
      </p>
      <label for={id}>Arguments (JSON)</label>
      <input id={id} class="mono" value={text} onInput={(event) => setText(event.currentTarget.value)} />
      <button type="submit" class="button button-primary" disabled={!canAct} title={canAct ? undefined : 'needs the operator role'}>
        Open view
      </button>
      {error !== undefined ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : null}
    </form>
  );
}
