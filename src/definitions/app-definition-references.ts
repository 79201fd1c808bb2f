/**
 * The checks of an AppSpec that a JSON schema cannot express: names that must be
 * unique within the app and references between its parts. The operator reports them
 * as Ready=False; a loader of YAML from Git can report them as UHLP_DEFINITION_INVALID.
 */
import type { AppSpec } from './app-definition-schema.js';

/** One broken rule, with the path of the field at fault (e.g. `spec.components[1].pool`). */
export interface ReferenceProblem {
  field: string;
  message: string;
}

const HANDLER_SECTION = { JIT: 'jit', LLM: 'llm', WORKFLOW: 'workflow' } as const;

/** Every problem of the spec, in document order; empty when the spec is consistent. */
export function findReferenceProblems(spec: AppSpec): ReferenceProblem[] {
  const problems: ReferenceProblem[] = [];
  const pools = new Set<string>();
  spec.pools.forEach((pool, index) => {
    if (pools.has(pool.name)) problems.push({ field: `spec.pools[${index}].name`, message: `pool name "${pool.name}" is declared twice` });
    pools.add(pool.name);
  });
  const components = new Set<string>();
  spec.components.forEach((component, index) => {
    const at = `spec.components[${index}]`;
    if (components.has(component.id)) problems.push({ field: `${at}.id`, message: `component id "${component.id}" is declared twice` });
    components.add(component.id);
    if (!pools.has(component.pool)) {
      problems.push({ field: `${at}.pool`, message: `component "${component.id}" uses pool "${component.pool}", which spec.pools does not declare` });
    }
    const section = HANDLER_SECTION[component.handler];
    if (component[section] === undefined) {
      problems.push({ field: `${at}.${section}`, message: `component "${component.id}" has handler ${component.handler} but no ${section} section` });
    }
  });
  (spec.routes ?? []).forEach((route, index) => {
    if (!components.has(route.component)) {
      problems.push({
        field: `spec.routes[${index}].component`,
        message: `route ${index} targets component "${route.component}", which spec.components does not declare`,
      });
    }
  });
  return problems;
}
