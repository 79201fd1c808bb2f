/**
 * The server side of the console as an MCP Apps host (SEP-1865): the apps'
 * `ui://` resources and tools (spec.ui), a resource read (its component's HTML
 * answer, with the CSP and permissions it declares), and a tool call, each run
 * as a turn of the app through the turn pipeline, so inside the app's own
 * sandbox, with the app's own capabilities, ledgered like any turn.
 *
 * The extension's rules are enforced here, whatever the page sends:
 * - a view calls only tools of its own app (the page binds each view frame to
 *   one app, and the app is in the path, never in a message from the view);
 * - a view (`caller: "view"`) calls only tools whose visibility includes
 *   `app`; the console's operator (`caller: "host"`, acting as the agent)
 *   only those whose visibility includes `model`;
 * - a resource is read only when it is a `ui://` resource the app declares.
 * A refusal is UHLP_CONSOLE_VIEW_REFUSED with the reason.
 *
 * - `GET  api/views` -> `{apps: [{app, resources, tools}]}` (tools as MCP lists them, `_meta.ui` included)
 * - `POST api/views/<app>/resources/read {"uri"}` -> an MCP ReadResourceResult (operator role: it runs a component)
 * - `POST api/views/<app>/tools/call {"name", "arguments", "caller": "host"|"view"}` -> an MCP CallToolResult
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { UiToolSpec } from '../apps/schema/ui-schema.js';
import { canonicalJson } from '../shared/canonical-json.js';
import { UhlpError } from '../shared/errors.js';
import type { FinalResponse } from '../execution/result-interpreter.js';
import { MAX_JSON_DEPTH, nestsDeeper } from '../turns/json-depth.js';
import { CONSOLE_API, type ConsoleContext } from './console-routes.js';
import { jsonObjectBody, requiredName } from './query-params.js';

/** The MIME type of an MCP Apps HTML resource. */
export const MCP_APP_MIME = 'text/html;profile=mcp-app';
/** Largest view document the console passes on. */
const MAX_VIEW_BYTES = 2 * 1024 * 1024;

export function registerViewsApi(app: FastifyInstance, context: ConsoleContext): void {
  app.get(`${CONSOLE_API}/views`, async (request, reply) => {
    context.access.apiPrincipal(request);
    const apps = [...context.registry.snapshot.apps.values()]
      .filter((loaded) => (loaded.document.spec.ui?.tools.length ?? 0) > 0 || (loaded.document.spec.ui?.resources.length ?? 0) > 0)
      .map((loaded) => ({
        app: loaded.id,
        resources: loaded.document.spec.ui!.resources.map(({ component: _component, ...resource }) => ({ ...resource, mimeType: MCP_APP_MIME })),
        tools: loaded.document.spec.ui!.tools.map(listedTool),
      }));
    return reply.send({ apps });
  });

  app.post<{ Params: { app: string } }>(`${CONSOLE_API}/views/:app/resources/read`, async (request, reply) => {
    // Reading a view runs its component (a turn of the app): an operator's doing, as a tool call is.
    context.access.operator(request);
    const loaded = appOf(context, request.params.app);
    const body = jsonObjectBody(request.body);
    const uri = typeof body['uri'] === 'string' ? body['uri'] : '';
    const resource = loaded.document.spec.ui?.resources.find((candidate) => candidate.uri === uri);
    if (resource === undefined) refuse(loaded.id, 'not a ui:// resource of the app', { uri: uri.slice(0, 206) });
    const final = await runComponent(context, loaded, resource.component, `console:resource/${resource.uri}`, { uri: resource.uri });
    const html = htmlOf(final);
    if (html === undefined) throw new UhlpError('UHLP_SANDBOX_BAD_RESPONSE', `component ${resource.component} answered no HTML document for ${resource.uri} (status ${final.status})`, { app: loaded.id, uri: resource.uri });
    return reply.send({
      contents: [
        {
          uri: resource.uri,
          mimeType: MCP_APP_MIME,
          text: html,
          _meta: { ui: { ...(resource.csp !== undefined ? { csp: resource.csp } : {}), ...(resource.permissions !== undefined ? { permissions: resource.permissions } : {}), ...(resource.prefersBorder !== undefined ? { prefersBorder: resource.prefersBorder } : {}) } },
        },
      ],
    });
  });

  app.post<{ Params: { app: string } }>(`${CONSOLE_API}/views/:app/tools/call`, async (request, reply) => {
    const principal = context.access.operator(request);
    const loaded = appOf(context, request.params.app);
    const body = jsonObjectBody(request.body);
    const name = typeof body['name'] === 'string' ? body['name'] : '';
    const caller = body['caller'] === 'view' ? 'view' : 'host';
    const args = body['arguments'] ?? {};
    const tool = loaded.document.spec.ui?.tools.find((candidate) => candidate.name === name);
    if (tool === undefined) refuse(loaded.id, 'not a tool of the app', { tool: name.slice(0, 64) });
    const visibility = tool.visibility ?? ['model', 'app'];
    if (caller === 'view' && !visibility.includes('app')) refuse(loaded.id, 'the tool\'s visibility leaves out "app": views may not call it', { tool: name });
    if (caller === 'host' && !visibility.includes('model')) refuse(loaded.id, 'the tool\'s visibility leaves out "model": only the app\'s views call it', { tool: name });
    if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new UhlpError('UHLP_BAD_REQUEST', 'arguments must be a JSON object', { field: 'arguments' });
    if (nestsDeeper(JSON.stringify(args), MAX_JSON_DEPTH)) throw new UhlpError('UHLP_JSON_TOO_DEEP', `arguments nest deeper than ${MAX_JSON_DEPTH} levels`, { field: 'arguments', maxDepth: MAX_JSON_DEPTH });
    const tier = loaded.document.spec.deploymentMode;
    const target = { tool: name, caller };
    let final: FinalResponse;
    try {
      final = await runComponent(context, loaded, tool.component, `console:tool/${tool.name}`, args);
    } catch (error) {
      await context.audit.record({ action: 'view.tool', principal, appId: loaded.id, tier, target, outcome: error instanceof UhlpError ? error.code : 'UHLP_INTERNAL' });
      throw error;
    }
    const result = toolResult(final);
    await context.audit.record({ action: 'view.tool', principal, appId: loaded.id, tier, target, outcome: result.isError === true ? 'tool-error' : 'ok' });
    return reply.send(result);
  });
}

/** A tool as MCP's tools/list has it, with its MCP Apps metadata. */
function listedTool(tool: UiToolSpec): Record<string, unknown> {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema ?? { type: 'object' },
    _meta: { ui: { ...(tool.resourceUri !== undefined ? { resourceUri: tool.resourceUri } : {}), visibility: tool.visibility ?? ['model', 'app'] } },
  };
}

function appOf(context: ConsoleContext, appId: string): LoadedApp {
  const name = requiredName(appId, 'app');
  const loaded = context.registry.snapshot.apps.get(name);
  if (loaded === undefined) refuse(name, 'no such app is loaded', {});
  return loaded;
}

function refuse(appId: string, reason: string, details: Record<string, unknown>): never {
  throw new UhlpError('UHLP_CONSOLE_VIEW_REFUSED', `${appId}: ${reason}`, { app: appId, reason, ...details });
}

/** A turn of one of the app's JIT components, as an internal trigger of the app itself (a workflow step runs the same way). */
function runComponent(context: ConsoleContext, app: LoadedApp, componentId: string, triggerEvent: string, payload: unknown): Promise<FinalResponse> {
  const component = app.components.get(componentId);
  if (component === undefined || component.handler !== 'JIT') throw new UhlpError('UHLP_CONSOLE_VIEW_REFUSED', `${app.id}: ${componentId} is no JIT component`, { app: app.id, reason: 'not a JIT component' });
  return context.pipeline.run(
    {
      app,
      component,
      pool: app.pools.get(component.pool)!,
      requestId: randomUUID(),
      source: 'view',
      route: triggerEvent,
      requestDataJson: canonicalJson({ source: 'trigger', triggerDetails: { sourceAppId: app.id, triggerEvent, payload } }),
      session: undefined,
      declaredOutputs: component.declaredOutputs ?? [],
      keepResult: true,
    },
    {},
  );
}

/** The HTML document of a component's answer: an httpResponse of text/html, or a generic string. */
function htmlOf(final: FinalResponse): string | undefined {
  if (final.status !== 200) return undefined;
  const type = String(final.headers['content-type'] ?? '');
  const body = Buffer.isBuffer(final.body) ? final.body.toString('utf8') : final.body;
  if (Buffer.byteLength(body) > MAX_VIEW_BYTES) return undefined;
  if (type.startsWith('text/html')) return body;
  if (final.result?.resultType === 'generic' && typeof final.result.data === 'string') return final.result.data;
  return undefined;
}

/** The CallToolResult of a component's answer: its data as structured content and as text; an error answer is `isError`. */
function toolResult(final: FinalResponse): { content: Array<{ type: 'text'; text: string }>; structuredContent?: unknown; isError?: boolean } {
  const data = final.result?.data;
  if (final.status >= 400 || final.result?.resultType === 'error') {
    const text = Buffer.isBuffer(final.body) ? final.body.toString('utf8') : final.body;
    return { content: [{ type: 'text', text }], isError: true };
  }
  const text = typeof data === 'string' ? data : JSON.stringify(data ?? null);
  return { content: [{ type: 'text', text }], ...(data !== null && typeof data === 'object' && !Array.isArray(data) ? { structuredContent: data } : {}) };
}
