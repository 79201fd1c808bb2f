/**
 * The rules of an app's `ui` block that the schema cannot state: each resource
 * and tool names a JIT component of the app, resource URIs and tool names are
 * unique, and a tool links only a resource the app declares.
 */
import type { AppSpec } from '../schema/app-definition-schema.js';

/** `[json path, reason]` for each problem of `spec.ui`. */
export function uiProblems(spec: AppSpec): Array<[string, string]> {
  const ui = spec.ui;
  if (ui === undefined) return [];
  const problems: Array<[string, string]> = [];
  const handlers = new Map(spec.components.map((component) => [component.id, component.handler]));
  const checkComponent = (at: string, id: string): void => {
    const handler = handlers.get(id);
    if (handler === undefined) problems.push([at, `component "${id}" is not declared in spec.components`]);
    else if (handler !== 'JIT') problems.push([at, `component "${id}" is ${handler}; views and their tools are answered by JIT components`]);
  };
  const uris = new Set<string>();
  ui.resources.forEach((resource, i) => {
    if (uris.has(resource.uri)) problems.push([`/spec/ui/resources/${i}/uri`, `${resource.uri} is declared twice`]);
    uris.add(resource.uri);
    checkComponent(`/spec/ui/resources/${i}/component`, resource.component);
  });
  const names = new Set<string>();
  ui.tools.forEach((tool, i) => {
    if (names.has(tool.name)) problems.push([`/spec/ui/tools/${i}/name`, `tool "${tool.name}" is declared twice`]);
    names.add(tool.name);
    checkComponent(`/spec/ui/tools/${i}/component`, tool.component);
    if (tool.resourceUri !== undefined && !uris.has(tool.resourceUri)) problems.push([`/spec/ui/tools/${i}/resourceUri`, `${tool.resourceUri} is not a resource of spec.ui.resources`]);
    if (tool.visibility !== undefined && new Set(tool.visibility).size !== tool.visibility.length) problems.push([`/spec/ui/tools/${i}/visibility`, 'names a caller twice']);
  });
  return problems;
}
