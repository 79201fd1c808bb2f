/**
 * The console's apps: each loaded app's revision, routes, components (with
 * the tools each may call), pools, capabilities and views; the apps a newer
 * revision breaks, held back at the revision they were last valid at, with
 * every problem (file, JSON path, reason); and the definitions that failed to
 * load at all.
 *
 * - `GET api/apps` -> `{revision, apps, heldBack, problems}`
 */
import type { FastifyInstance } from 'fastify';
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { ComponentSpec } from '../apps/schema/app-definition-schema.js';
import { toolsFor } from '../mcp/tool-catalog.js';
import { CONSOLE_API, type ConsoleContext } from './console-routes.js';

export function registerAppsApi(app: FastifyInstance, context: ConsoleContext): void {
  app.get(`${CONSOLE_API}/apps`, async (request, reply) => {
    context.access.apiPrincipal(request);
    const snapshot = context.registry.snapshot;
    return reply.send({
      revision: snapshot.revision,
      apps: [...snapshot.apps.values()].sort((a, b) => a.id.localeCompare(b.id)).map(describeApp),
      heldBack: snapshot.heldBack,
      problems: snapshot.problems,
    });
  });
}

/** What the apps page shows of one app. */
export function describeApp(app: LoadedApp): Record<string, unknown> {
  const spec = app.document.spec;
  const capabilities = spec.capabilities ?? {};
  // What an execution of the app is listed (run-owner tools are the workflow engine's own, not the app's).
  const available = toolsFor(capabilities).map((tool) => tool.name);
  const critical = new Set((spec.tools ?? []).filter((tool) => tool.risk_level === 'critical').map((tool) => tool.name));
  return {
    id: app.id,
    revision: app.revision,
    deploymentMode: spec.deploymentMode,
    pathPrefix: app.pathPrefix,
    hosts: app.hosts,
    routes: spec.routes.map((route) => {
      const { component, ...source } = route;
      const [kind, detail] = Object.entries(source).find(([, value]) => value !== undefined) ?? ['unknown', {}];
      return { kind, component, ...(detail as Record<string, unknown>) };
    }),
    components: spec.components.map((component) => ({
      id: component.id,
      handler: component.handler,
      pool: component.pool,
      runs: whatItRuns(component),
      optimized: component.llm?.optimize?.mode !== undefined && component.llm.optimize.mode !== 'off',
      tools: toolsOf(component, available).map((name) => ({ name, critical: critical.has(name) })),
    })),
    pools: spec.pools.map((pool) => ({ name: pool.name, runner: pool.runner, minWarm: pool.minWarm, maxSize: pool.maxSize, limits: pool.limits })),
    capabilities,
    ui: spec.ui ?? { resources: [], tools: [] },
  };
}

/** The file or workflow a component runs, for people. */
function whatItRuns(component: ComponentSpec): string {
  if (component.jit !== undefined) return `${component.jit.script}${component.jit.function !== undefined ? `#${component.jit.function}` : ''}`;
  if (component.cs !== undefined) return component.cs.function !== undefined ? `cs-js ${component.cs.function}@${component.cs.ref ?? 'latest'}` : `cs-js ${String(component.cs.sha256).slice(0, 12)}`;
  if (component.llm !== undefined) return component.llm.prompt;
  if (component.workflow !== undefined) return `workflows/${component.workflow.workflowId}.yaml`;
  return '';
}

/** An LLM component's model may call only the tools its llm block lists; any other component, every tool its app has. */
function toolsOf(component: ComponentSpec, available: readonly string[]): string[] {
  if (component.handler === 'LLM') {
    const listed = new Set(component.llm?.tools ?? []);
    return available.filter((name) => listed.has(name));
  }
  return [...available];
}
