/**
 * The tools an app marks `risk_level: critical` (`spec.tools`): its executions'
 * MCP tokens carry them, and the capability guard refuses them unless a
 * workflow run's policy allows them (src/mcp/tool-invoker.ts).
 */
import type { LoadedApp } from './app-snapshot.js';

export function criticalToolsOf(app: LoadedApp): ReadonlySet<string> {
  return new Set((app.document.spec.tools ?? []).filter((tool) => tool.risk_level === 'critical').map((tool) => tool.name));
}
