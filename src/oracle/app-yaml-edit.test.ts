import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { promoteInAppYaml, revertInAppYaml } from './app-yaml-edit.js';

const APP = `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: desk }
spec:
  pools:
    # the model's pool
    - { name: brain, runner: llm }
    - { name: code, runner: jit }
  components:
    - id: classify
      handler: LLM
      pool: brain
      llm: { prompt: prompts/c.njk, temperature: 0, optimize: { mode: auto } }
    - { id: other, handler: LLM, pool: brain, llm: { prompt: p.njk } }
`;

describe('app.yaml edits', () => {
  it('promotes one component to its generated code, keeping comments and the other components', () => {
    const promoted = promoteInAppYaml(APP, 'classify', { script: 'generated/classify-0123456789ab.js', codePool: 'code' });
    expect(promoted).toContain("# the model's pool");
    const spec = parse(promoted).spec;
    expect(spec.components[0]).toEqual({
      id: 'classify',
      handler: 'JIT',
      pool: 'code',
      llm: { prompt: 'prompts/c.njk', temperature: 0, optimize: { mode: 'auto' } },
      jit: { script: 'generated/classify-0123456789ab.js' },
      fallback: { pool: 'brain' },
    });
    expect(spec.components[1]).toEqual(parse(APP).spec.components[1]);
    expect(parse(revertInAppYaml(promoted, 'classify'))).toEqual(parse(APP));
  });

  it('refuses a component that is missing or not in the form the edit expects', () => {
    expect(() => promoteInAppYaml(APP, 'nope', { script: 'generated/x.js', codePool: 'code' })).toThrow(/no component "nope"/);
    expect(() => revertInAppYaml(APP, 'classify')).toThrow(/not a promoted component/);
    const promoted = promoteInAppYaml(APP, 'classify', { script: 'generated/x.js', codePool: 'code' });
    expect(() => promoteInAppYaml(promoted, 'classify', { script: 'generated/y.js', codePool: 'code' })).toThrow(/not an LLM component/);
    expect(() => promoteInAppYaml('spec: [', 'classify', { script: 'generated/x.js', codePool: 'code' })).toThrow(/does not parse/);
  });
});
