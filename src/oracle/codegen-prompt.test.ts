import { describe, expect, it } from 'vitest';
import { CODEGEN_MARKER, codegenMessages, extractModule, feedbackMessage } from './codegen-prompt.js';
import { makeSample, type OracleSample } from './oracle-sample.js';

describe('code generation prompt', () => {
  it('shows the templates, the schema, the tools and the training samples, and is marked', () => {
    const made = makeSample({ body: { text: 'refund' } }, { label: 'billing' }, 5, new Date(0)) as OracleSample;
    const [system, user] = codegenMessages({
      appId: 'desk',
      componentId: 'classify',
      definition: { revision: 'r', templates: new Map([['prompts/c.njk', 'Classify: {{ body.text }}']]), schema: { type: 'object' } },
      tools: ['core.kv.get'],
      training: [made],
    });
    expect(system).toMatchObject({ role: 'system', content: expect.stringContaining(CODEGEN_MARKER) });
    expect(user!.content).toContain('Component: desk/classify');
    expect(user!.content).toContain('Classify: {{ body.text }}');
    expect(user!.content).toContain('core.kv.get');
    const samples = /```json\n(\[[\s\S]*?\])\n```/.exec(String(user!.content))![1]!;
    expect(JSON.parse(samples)).toEqual([{ event: { body: { text: 'refund' } }, output: { label: 'billing' } }]);
    expect(feedbackMessage('it disagreed', [{ inputs: { a: 1 }, expected: 1, got: 2 }]).content).toMatch(/disagreed[\s\S]*"expected": 1/);
  });

  it('reads the module from a fenced block, or the whole answer', () => {
    expect(extractModule('Here:\n```js\nexport default async function (e) { return 1; }\n```\nDone.')).toEqual({ source: 'export default async function (e) { return 1; }\n' });
    expect(extractModule('export default (e) => 2')).toEqual({ source: 'export default (e) => 2\n' });
    expect(extractModule('```js\nconst x = 1;\n```')).toMatchObject({ problem: expect.stringMatching(/default export/) });
    expect(extractModule(null)).toMatchObject({ problem: expect.any(String) });
    expect(extractModule(`export default 1;${' '.repeat(70_000)}x`)).toMatchObject({ problem: expect.stringMatching(/over/) });
  });
});
