import { describe, expect, it } from 'vitest';
import { validateAppDefinition } from '../validation/validate-app-definition.js';

function doc(capabilities: unknown): unknown {
  return {
    apiVersion: 'uhlp.dev/v1alpha1',
    kind: 'AppDefinition',
    metadata: { name: 'shop' },
    spec: {
      pools: [{ name: 'node' }],
      components: [{ id: 'greet', handler: 'JIT', pool: 'node', jit: { script: 'scripts/greet.js' } }],
      ...(capabilities !== undefined ? { capabilities } : {}),
    },
  };
}

const options = { file: 'apps/shop/app.yaml', appDirName: 'shop', fileExists: () => true };

describe('spec.capabilities', () => {
  it('is empty when omitted: the app gets no capability tools', () => {
    const result = validateAppDefinition(doc(undefined), options);
    expect(result.ok && result.document.spec.capabilities).toEqual({});
  });

  it('takes the keys of the issue and fills the documented defaults', () => {
    const result = validateAppDefinition(
      doc({
        shell: { allow: [['git', 'status'], ['ls']] },
        web: { allowHosts: ['api.example.com'] },
        kv: { prefixes: ['ctr:'] },
        llm: { models: ['gpt-4o-mini'] },
      }),
      options,
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.document.spec.capabilities).toEqual({
      shell: { allow: [['git', 'status'], ['ls']], timeoutMs: 5000, maxStdoutBytes: 65536, maxStderrBytes: 65536, env: [] },
      web: { allowHosts: ['api.example.com'], methods: ['GET'], timeoutMs: 5000, maxBodyBytes: 1048576, allowPrivate: [] },
      kv: { prefixes: ['ctr:'], ops: ['get', 'set', 'del'] },
      llm: { models: ['gpt-4o-mini'], maxTokens: 1024 },
    });
  });

  it.each([
    [{ shell: { allow: [[]] } }, '/spec/capabilities/shell/allow/0'],
    [{ shell: { allow: [['ls']], env: ['BAD-NAME'] } }, '/spec/capabilities/shell/env/0'],
    [{ web: { allowHosts: ['a'], allowPrivate: ['localhost'] } }, '/spec/capabilities/web/allowPrivate/0'],
    [{ web: { allowHosts: ['a'], methods: ['CONNECT'] } }, '/spec/capabilities/web/methods/0'],
    [{ kv: { prefixes: ['a:'], ops: ['scan'] } }, '/spec/capabilities/kv/ops/0'],
    [{ llm: { models: [] } }, '/spec/capabilities/llm/models'],
    [{ docker: {} }, '/spec/capabilities/docker'],
  ])('refuses %j at %s', (capabilities, path) => {
    const result = validateAppDefinition(doc(capabilities), options);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems.map((problem) => problem.path)).toContain(path);
  });

  it('accepts host:port pairs for allowPrivate, IPv6 in brackets', () => {
    const result = validateAppDefinition(doc({ web: { allowHosts: ['a'], allowPrivate: ['127.0.0.1:8080', '[::1]:80', 'db.internal:5432'] } }), options);
    expect(result.ok).toBe(true);
  });
});
