import { describe, expect, it } from 'vitest';
import { validateAppDefinition } from './validate-app-definition.js';

const app = (routeFlow: unknown, componentFlow?: unknown) => ({
  apiVersion: 'uhlp.dev/v1alpha1',
  kind: 'AppDefinition',
  metadata: { name: 'desk' },
  spec: {
    pools: [{ name: 'main' }],
    components: [{ id: 'run', handler: 'JIT', pool: 'main', jit: { script: 'run.mjs' }, ...(componentFlow !== undefined ? { flow: componentFlow } : {}) }],
    routes: [
      { http: { method: 'POST', path: '/tickets/:ticket' }, component: 'run', ...(routeFlow !== undefined ? { flow: routeFlow } : {}) },
      { queue: { name: 'jobs' }, component: 'run', flow: { concurrency: { key: 'payload.user.id', limit: 2 } } },
    ],
  },
});

function validate(raw: unknown) {
  return validateAppDefinition(raw, { file: 'apps/desk/app.yaml', appDirName: 'desk', fileExists: () => true, readFile: () => undefined });
}

describe('flow declarations when the app loads', () => {
  it('accepts keys, a throttle, a debounce and a priority over the event', () => {
    const flow = {
      concurrency: { key: 'params.ticket', limit: 1 },
      throttle: { key: 'headers.x-tenant', limit: 10, periodMs: 60000 },
      debounce: { key: 'body.user.id', periodMs: 500 },
      priority: 'headers.x-priority',
    };
    expect(validate(app(flow, { concurrency: { limit: 3 } }))).toMatchObject({ ok: true });
  });

  // [flow, the problem's path, a part of its reason]
  const refused: Array<[unknown, string, string]> = [
    [{ concurrency: { key: 'process.env.HOME', limit: 1 } }, '/spec/routes/0/flow/concurrency/key', 'must start with one of'],
    [{ concurrency: { key: 'body.__proto__.x', limit: 1 } }, '/spec/routes/0/flow/concurrency/key', 'not allowed'],
    [{ throttle: { key: "body['a']", limit: 1, periodMs: 10 } }, '/spec/routes/0/flow/throttle/key', 'must start with'],
    [{ throttle: { key: 'body.a[0]', limit: 1, periodMs: 10 } }, '/spec/routes/0/flow/throttle/key', 'is not a name'],
    [{ debounce: { key: 'params.nope', periodMs: 10 } }, '/spec/routes/0/flow/debounce/key', 'no parameter :nope'],
    [{ priority: 'body.a()' }, '/spec/routes/0/flow/priority', 'is not a name'],
    [{ concurrency: { key: 'params.ticket', limit: 0 } }, '/spec/routes/0/flow/concurrency/limit', ''],
    [{ concurrency: { key: 'params.ticket', limit: 1, extra: true } }, '/spec/routes/0/flow/concurrency', ''],
  ];
  it.each(refused)('refuses %j at %s', (flow, path, reason) => {
    const result = validate(app(flow));
    expect(result.ok).toBe(false);
    const problems = (result as { problems: Array<{ path: string; reason: string }> }).problems;
    expect(problems.some((p) => p.path.startsWith(path) && p.reason.includes(reason)), JSON.stringify(problems)).toBe(true);
  });

  it("names a component's flow by its path", () => {
    const result = validate(app(undefined, { concurrency: { key: 'env.X', limit: 1 } }));
    expect(result.ok).toBe(false);
    expect((result as { problems: Array<{ path: string }> }).problems.map((p) => p.path)).toContain('/spec/components/0/flow/concurrency/key');
  });
});
