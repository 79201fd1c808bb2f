import { describe, expect, it } from 'vitest';
import type { AppDefinitionResource } from '../k8s/custom-resources.js';
import { fieldPath, LEGACY_APP_FINALIZER, specProblems, withoutLegacyFinalizer } from './app-definition-reconciler.js';

describe('fieldPath', () => {
  const cases: Array<[string, string]> = [
    ['/spec/components/1/pool', 'spec.components[1].pool'],
    ['/spec/ingress/pathPrefix', 'spec.ingress.pathPrefix'],
    ['/metadata/name', 'metadata.name'],
    ['/a~1b/c~0d', 'a/b.c~d'],
    ['/', '.'],
  ];
  for (const [pointer, field] of cases) it(`${pointer} -> ${field}`, () => expect(fieldPath(pointer)).toBe(field));
});

describe('specProblems', () => {
  const app = (name: string, spec: Record<string, unknown>): AppDefinitionResource =>
    ({
      apiVersion: 'uhlp.dev/v1alpha1',
      kind: 'AppDefinition',
      metadata: { name, namespace: 'ns' },
      spec: {
        pools: [{ name: 'main' }],
        components: [{ id: 'hello', handler: 'JIT', pool: 'main', jit: { script: 'hello.js' } }],
        routes: [{ http: { method: 'GET', path: '/hello' }, component: 'hello' }],
        ...spec,
      },
    }) as unknown as AppDefinitionResource;

  it('finds nothing wrong with a consistent app (script files are not checked: a resource has none)', () => {
    expect(specProblems(app('shop', {}))).toEqual([]);
  });

  it('names each dangling reference by its field', () => {
    const problems = specProblems(
      app('shop', {
        components: [{ id: 'hello', handler: 'JIT', pool: 'gpu', jit: { script: 'hello.js' } }],
        routes: [{ http: { method: 'GET', path: '/' }, component: 'nope' }],
      }),
    );
    expect(problems.map((problem) => problem.field)).toEqual(['spec.components[0].pool', 'spec.routes[0].component']);
    expect(problems[0]!.message).toContain('"gpu"');
    expect(problems[1]!.message).toContain('"nope"');
  });

  it('refuses a name that is not a DNS label', () => {
    expect(specProblems(app('a.b', {})).map((problem) => problem.field)).toEqual(['metadata.name']);
  });
});

describe('withoutLegacyFinalizer', () => {
  const app = (finalizers: string[] | undefined): AppDefinitionResource =>
    ({ metadata: { name: 'shop', namespace: 'ns', resourceVersion: '42', ...(finalizers ? { finalizers } : {}) } }) as unknown as AppDefinitionResource;

  it('drops the finalizer earlier operators held and keeps the others, at the version read', () => {
    expect(withoutLegacyFinalizer(app([LEGACY_APP_FINALIZER, 'example.com/keep']))).toEqual({ finalizers: ['example.com/keep'], resourceVersion: '42' });
    expect(withoutLegacyFinalizer(app([LEGACY_APP_FINALIZER]))).toEqual({ finalizers: [], resourceVersion: '42' });
    expect(withoutLegacyFinalizer(app(undefined))).toEqual({ finalizers: [], resourceVersion: '42' });
  });
});
