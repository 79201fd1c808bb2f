import { describe, expect, it } from 'vitest';
import type { AppSpec } from './app-definition-schema.js';
import { findReferenceProblems } from './app-definition-references.js';

const pool = (name: string): AppSpec['pools'][number] => ({
  name,
  runner: 'jit',
  minWarm: 1,
  maxSize: 4,
  maxUses: 1000,
  idleTtlSeconds: 300,
  maxQueue: 256,
  acquireTimeoutMs: 5000,
  limits: { memoryMb: 128, cpus: 0.5, timeoutMs: 3000 },
});
const jit = (id: string, poolName: string): AppSpec['components'][number] => ({ id, handler: 'JIT', pool: poolName, jit: { script: 'a.js', function: 'default' } });

function spec(overrides: Partial<AppSpec>): AppSpec {
  return {
    deploymentMode: 'development',
    ingress: { hosts: [] },
    pools: [pool('main')],
    components: [jit('hello', 'main')],
    routes: [{ component: 'hello', http: { method: 'GET', path: '/hello' } }],
    ...overrides,
  };
}

describe('findReferenceProblems', () => {
  const cases: Array<{ name: string; spec: AppSpec; problems: Array<{ field: string; message: RegExp }> }> = [
    { name: 'a consistent spec', spec: spec({}), problems: [] },
    {
      name: 'a component on an undeclared pool',
      spec: spec({ components: [jit('hello', 'gpu')] }),
      problems: [{ field: 'spec.components[0].pool', message: /pool "gpu"/ }],
    },
    {
      name: 'a route to an undeclared component',
      spec: spec({ routes: [{ component: 'missing' }] }),
      problems: [{ field: 'spec.routes[0].component', message: /component "missing"/ }],
    },
    {
      name: 'duplicate pool names and component ids',
      spec: spec({ pools: [pool('main'), pool('main')], components: [jit('hello', 'main'), jit('hello', 'main')] }),
      problems: [
        { field: 'spec.pools[1].name', message: /declared twice/ },
        { field: 'spec.components[1].id', message: /declared twice/ },
      ],
    },
    {
      name: 'a handler without its section',
      spec: spec({ components: [{ id: 'hello', handler: 'LLM', pool: 'main' }] }),
      problems: [{ field: 'spec.components[0].llm', message: /handler LLM but no llm section/ }],
    },
  ];
  for (const { name, spec: input, problems } of cases) {
    it(name, () => {
      const found = findReferenceProblems(input);
      expect(found.map((p) => p.field)).toEqual(problems.map((p) => p.field));
      found.forEach((problem, index) => expect(problem.message).toMatch(problems[index]!.message));
    });
  }
});
