import { describe, expect, it } from 'vitest';
import { COMPONENT_ID_PATTERN, type AppSpec } from '../schema/app-definition-schema.js';
import { uiProblems } from './validate-ui.js';
import { readFileSync } from 'node:fs';

const base = {
  pools: [{ name: 'p', runner: 'jit' }],
  components: [
    { id: 'view', handler: 'JIT', pool: 'p', jit: { script: 'v.mjs' } },
    { id: 'tool', handler: 'JIT', pool: 'p', jit: { script: 't.mjs' } },
    { id: 'brain', handler: 'LLM', pool: 'p' },
  ],
} as unknown as AppSpec;

describe('spec.ui', () => {
  it('takes resources and tools answered by JIT components of the app', () => {
    expect(uiProblems({ ...base, ui: { resources: [{ uri: 'ui://a/v', name: 'V', component: 'view' }], tools: [{ name: 't', description: '', component: 'tool', resourceUri: 'ui://a/v' }] } })).toEqual([]);
  });

  it.each([
    [{ resources: [{ uri: 'ui://a/v', name: 'V', component: 'nope' }], tools: [] }, '/spec/ui/resources/0/component', 'is not declared'],
    [{ resources: [{ uri: 'ui://a/v', name: 'V', component: 'brain' }], tools: [] }, '/spec/ui/resources/0/component', 'answered by JIT components'],
    [{ resources: [], tools: [{ name: 't', description: '', component: 'tool', resourceUri: 'ui://a/missing' }] }, '/spec/ui/tools/0/resourceUri', 'is not a resource'],
    [{ resources: [{ uri: 'ui://a/v', name: 'V', component: 'view' }, { uri: 'ui://a/v', name: 'W', component: 'view' }], tools: [] }, '/spec/ui/resources/1/uri', 'declared twice'],
    [{ resources: [], tools: [{ name: 't', description: '', component: 'tool' }, { name: 't', description: '', component: 'tool' }] }, '/spec/ui/tools/1/name', 'declared twice'],
  ])('refuses %j at its path', (ui, where, reason) => {
    const problems = uiProblems({ ...base, ui } as AppSpec);
    expect(problems).toHaveLength(1);
    expect(problems[0]![0]).toBe(where);
    expect(problems[0]![1]).toContain(reason);
  });

  it("names component ids as the AppDefinition schema does (ui-schema.ts keeps its own copy, to stay free of an import cycle)", () => {
    const source = readFileSync(new URL('../schema/ui-schema.ts', import.meta.url), 'utf8');
    expect(source).toContain(`const COMPONENT_ID_PATTERN = '${COMPONENT_ID_PATTERN}';`);
  });
});
