/**
 * One app's HTTP routes, compiled once per definitions revision. Lookup is a map
 * hit for literal paths and a short ordered scan for patterns.
 */
import type { HttpMethod } from '../../contract/execute-contract.js';
import type { RouteSpec } from '../../apps/schema/app-definition-schema.js';
import type { FlowSpec } from '../../apps/schema/flow-schema.js';
import { compareRoutePatterns, compileRoutePattern, matchRoutePattern, type PathParameters, type RoutePattern } from './route-pattern.js';

export interface CompiledRoute {
  readonly method: HttpMethod;
  readonly pattern: RoutePattern;
  readonly componentId: string;
  /** The route's flow control per key. @defaultValue none */
  readonly flow?: FlowSpec;
}

export interface RouteMatch {
  readonly route: CompiledRoute;
  readonly pathParameters: PathParameters;
}

export class RouteTable {
  private readonly literal = new Map<string, CompiledRoute>();
  private readonly patterned = new Map<string, CompiledRoute[]>();

  /** Throws RoutePatternError for a bad pattern; callers validate definitions first. */
  constructor(routes: readonly RouteSpec[]) {
    for (const route of routes) {
      if (!route.http) continue;
      const pattern = compileRoutePattern(route.http.path);
      const compiled: CompiledRoute = { method: route.http.method as HttpMethod, pattern, componentId: route.component, ...(route.flow !== undefined ? { flow: route.flow } : {}) };
      if (pattern.segments.every((s) => s.kind === 'literal')) {
        const key = `${compiled.method} ${normalizeLiteral(route.http.path)}`;
        if (!this.literal.has(key)) this.literal.set(key, compiled);
      } else {
        const list = this.patterned.get(compiled.method) ?? [];
        list.push(compiled);
        this.patterned.set(compiled.method, list);
      }
    }
    for (const list of this.patterned.values()) list.sort((a, b) => compareRoutePatterns(a.pattern, b.pattern));
  }

  /** `path` has no query string. Throws PathDecodeError for a badly encoded parameter. */
  match(method: string, path: string): RouteMatch | undefined {
    const literal = this.literal.get(`${method} ${normalizeLiteral(path)}`);
    if (literal) return { route: literal, pathParameters: {} };
    const list = this.patterned.get(method);
    if (!list) return undefined;
    for (const route of list) {
      const pathParameters = matchRoutePattern(route.pattern, path);
      if (pathParameters) return { route, pathParameters };
    }
    return undefined;
  }
}

function normalizeLiteral(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}
