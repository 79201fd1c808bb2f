import { describe, expect, it } from 'vitest';
import { validateAppDefinition } from './validate-app-definition.js';

const app = (extra: Record<string, unknown> = {}) => ({
  apiVersion: 'uhlp.dev/v1alpha1',
  kind: 'AppDefinition',
  metadata: { name: 'desk' },
  spec: {
    pools: [
      { name: 'brain', runner: 'llm' },
      { name: 'main' },
    ],
    components: [
      { id: 'triage', handler: 'LLM', pool: 'brain', llm: { prompt: 'prompts/t.njk' } },
      { id: 'flow', handler: 'WORKFLOW', pool: 'brain', workflow: { workflowId: 'flow' } },
    ],
    routes: [{ http: { method: 'POST', path: '/flow' }, component: 'flow' }],
    capabilities: { llm: { models: ['small'] } },
    ...extra,
  },
});

function validate(raw: unknown, files: Record<string, string>) {
  return validateAppDefinition(raw, {
    file: 'apps/desk/app.yaml',
    appDirName: 'desk',
    fileExists: (relative) => relative in files || relative === 'prompts/t.njk',
    readFile: (relative) => files[relative],
  });
}

const good = 'start: a\nnodes:\n  a: { type: agent, component: triage, output: x, next: done }\n  done: { type: end }\n';

describe('WORKFLOW components when the app loads', () => {
  it('accepts an app whose workflow file is valid', () => {
    expect(validate(app(), { 'workflows/flow.yaml': good })).toMatchObject({ ok: true });
  });

  it('names the workflow file and the JSON path of a problem in it', () => {
    const result = validate(app(), { 'workflows/flow.yaml': good.replace('component: triage', 'component: nobody') });
    expect(result).toMatchObject({ ok: false, problems: [{ file: 'apps/desk/workflows/flow.yaml', path: '/nodes/a/component', reason: 'no component "nobody" in the app' }] });
  });

  it('requires the workflow file, the llm capability for agents, and known tools in spec.tools', () => {
    expect(validate(app(), {})).toMatchObject({ ok: false, problems: [{ file: 'apps/desk/app.yaml', path: '/spec/components/1/workflow/workflowId' }] });
    const noLlm = app();
    delete (noLlm.spec as Record<string, unknown>)['capabilities'];
    const result = validate(noLlm, { 'workflows/flow.yaml': good });
    expect(result.ok).toBe(false);
    expect(JSON.stringify(result)).toContain('llm capability');
    expect(validate(app({ tools: [{ name: 'core.nothing', risk_level: 'critical' }] }), { 'workflows/flow.yaml': good })).toMatchObject({
      ok: false,
      problems: [{ path: '/spec/tools/0/name', reason: 'no tool named "core.nothing"' }],
    });
  });

  it('takes each doubleTexting mode and refuses any other value', () => {
    const withMode = (mode: unknown) => {
      const definition = app();
      (definition.spec.components[1] as { workflow: Record<string, unknown> }).workflow['doubleTexting'] = mode;
      return validate(definition, { 'workflows/flow.yaml': good });
    };
    for (const mode of ['reject', 'enqueue', 'interrupt', 'rollback']) expect(withMode(mode), mode).toMatchObject({ ok: true });
    for (const mode of ['REJECT', 'queue', '', 1, null, ['reject'], { mode: 'reject' }]) {
      const result = withMode(mode);
      expect(result.ok, JSON.stringify(mode)).toBe(false);
      expect(JSON.stringify(result)).toContain('/spec/components/1/workflow/doubleTexting');
    }
  });

  it('refuses a workflow id that could leave workflows/', () => {
    const hostile = app();
    (hostile.spec.components[1] as { workflow: { workflowId: string } }).workflow.workflowId = '../app';
    expect(validate(hostile, {}).ok).toBe(false);
  });
});
