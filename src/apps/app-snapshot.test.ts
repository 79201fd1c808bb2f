import { describe, expect, it } from 'vitest';
import type { AppDefinitionDocument } from './schema/app-definition-schema.js';
import { validateAppDefinition } from './validation/validate-app-definition.js';
import { AppSnapshot } from './app-snapshot.js';

function app(name: string, ingress: Record<string, unknown>): { file: string; document: AppDefinitionDocument } {
  const result = validateAppDefinition(
    {
      apiVersion: 'uhlp.dev/v1alpha1',
      kind: 'AppDefinition',
      metadata: { name },
      spec: {
        ingress,
        pools: [{ name: 'p' }],
        components: [{ id: 'c', handler: 'JIT', pool: 'p', jit: { script: 'x.js' } }],
        routes: [{ http: { method: 'GET', path: '/x' }, component: 'c' }],
      },
    },
    { file: `apps/${name}/app.yaml`, appDirName: name, fileExists: () => true },
  );
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return { file: `apps/${name}/app.yaml`, document: result.document };
}

describe('AppSnapshot.resolve', () => {
  const snapshot = new AppSnapshot(
    'abc1234',
    [app('shop', { hosts: ['shop.example.com'] }), app('admin', { pathPrefix: '/shop/admin' }), app('root', { pathPrefix: '/' })],
    [],
  );
  const cases: Array<[host: string | undefined, path: string, app: string | undefined, appPath?: string]> = [
    ['shop.example.com', '/anything', 'shop', '/anything'],
    ['SHOP.example.com:8080', '/x', 'shop', '/x'],
    ['other.example.com', '/shop/x', 'shop', '/x'],
    [undefined, '/shop', 'shop', '/'],
    [undefined, '/shop/admin/x', 'admin', '/x'],
    [undefined, '/shopping', 'root', '/shopping'],
    [undefined, '/x', 'root', '/x'],
  ];
  it.each(cases)('%s %s -> %s', (host, path, expected, appPath) => {
    const resolution = snapshot.resolve(host, path);
    expect(resolution?.app.id).toBe(expected);
    if (appPath) expect(resolution?.appPath).toBe(appPath);
  });

  it('resolves nothing without a matching host or prefix', () => {
    const only = new AppSnapshot('abc1234', [app('shop', {})], []);
    expect(only.resolve('x', '/other')).toBeUndefined();
  });

  it('refuses an app whose prefix or host another app took, and keeps the first', () => {
    const conflicting = new AppSnapshot('abc1234', [app('a', { pathPrefix: '/p', hosts: ['h'] }), app('b', { pathPrefix: '/p' }), app('c', { hosts: ['h'] })], []);
    expect([...conflicting.apps.keys()]).toEqual(['a']);
    expect(conflicting.problems).toEqual([
      { file: 'apps/b/app.yaml', path: '/spec/ingress/pathPrefix', reason: '"/p" is already taken by app "a"' },
      { file: 'apps/c/app.yaml', path: '/spec/ingress/hosts', reason: '"h" is already taken by app "a"' },
    ]);
  });
});

describe('AppSnapshot.problems', () => {
  it("lists a held-back app's problems once, with the app, and the other problems in problems", () => {
    const heldProblem = { file: 'apps/other/app.yaml', path: '/spec/pools/0/minWarm', reason: 'must be an integer' };
    const otherProblem = { file: 'apps/broken/app.yaml', path: '/', reason: 'the app directory has no app.yaml' };
    const snapshot = new AppSnapshot('new', [app('shop', { pathPrefix: '/shop' }), { ...app('other', { pathPrefix: '/other' }), revision: 'old' }], [heldProblem, otherProblem], [
      { app: 'other', servingRevision: 'old', problems: [heldProblem] },
    ]);
    expect(snapshot.problems).toEqual([otherProblem]);
    expect(snapshot.heldBack).toEqual([{ app: 'other', servingRevision: 'old', problems: [heldProblem] }]);
  });
});
