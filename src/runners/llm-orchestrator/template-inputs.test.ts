import { describe, expect, it } from 'vitest';
import { FAKE_REVISION, FakeTools } from '../../../test/helpers/fake-tools.js';
import { DefinitionFiles } from './definition-files.js';
import { PromptTemplates } from './prompt-templates.js';
import { MAX_INPUT_PATHS } from '../../contract/template-inputs.js';
import { TemplateInputs } from './template-inputs.js';

const VARIABLES = Object.freeze({
  params: { id: '42' },
  query: { lang: 'fr', page: '2' },
  headers: { 'x-user': 'ada', 'user-agent': 'curl' },
  body: { text: 'Broken login', meta: { tags: ['a', 'b'], urgent: true }, extra: 'unused' },
  config: { company: 'Acme', tone: 'dry' },
  session: { id: 'SES-1', turn: 3 },
  app: { id: 'desk', revision: 'abc', deploymentMode: 'development' },
  component: { id: 'triage' },
  request: { source: 'http' },
});

async function readPaths(files: Record<string, string>, root = 'p.njk', variables: Record<string, unknown> = VARIABLES): Promise<{ text: string; paths: string[][] }> {
  const templates = new PromptTemplates(new DefinitionFiles());
  const inputs = new TemplateInputs(variables);
  const text = await templates.render(root, variables, { appId: 'app', revision: FAKE_REVISION, tools: new FakeTools({ files }) }, inputs.observe);
  return { text, paths: inputs.paths() };
}

describe('TemplateInputs', () => {
  it('notes the leaves a template reads, through includes, and nothing else of the request', async () => {
    const { text, paths } = await readPaths({
      'p.njk': '{{ body.text }} for {{ params.id }} ({% include "q.njk" %}){% if body.meta.urgent %}!{% endif %}',
      'q.njk': '{{ config.company }} in {{ query.lang }}',
    });
    expect(text).toBe('Broken login for 42 (Acme in fr)!');
    expect(paths).toEqual([['body', 'text'], ['config', 'company'], ['params', 'id'], ['query', 'lang'], ['body', 'meta', 'urgent']]);
  });

  it('takes an object whole when it is dumped or looped over, and an array whole when it is touched', async () => {
    const { paths } = await readPaths({ 'p.njk': '{{ headers | dump }} {% for k, v in config %}{{ k }}{% endfor %} {{ body.meta.tags | join(",") }} {{ headers["x-user"] }}' });
    expect(paths).toEqual([['config'], ['headers'], ['body', 'meta', 'tags']]);
  });

  it('notes a value read through a variable set by the template, and not the names the template defines', async () => {
    const { text, paths } = await readPaths({ 'p.njk': '{% set b = body %}{% set n = range(2) | length %}{{ b.text }}{{ n }}{{ loop_var }}' });
    expect(text).toBe('Broken login2');
    expect(paths).toEqual([['body', 'text']]);
  });

  it('notes a scalar variable and a missing key', async () => {
    const { paths } = await readPaths({ 'p.njk': '{{ body }}|{{ params.missing }}' }, 'p.njk', { ...VARIABLES, body: 'plain text' });
    expect(paths).toEqual([['body'], ['params', 'missing']]);
  });

  it('keeps the frozen variables unchanged and refuses writes through its view', async () => {
    const inputs = new TemplateInputs(VARIABLES);
    const view = inputs.observe('body', VARIABLES.body) as Record<string, unknown>;
    expect(() => {
      'use strict';
      (view as { text: string }).text = 'changed';
    }).toThrow();
    expect(VARIABLES.body.text).toBe('Broken login');
    expect(inputs.observe('range', 5)).toBe(5);
    expect(inputs.paths()).toEqual([]);
  });

  it('reports each variable whole past the bound of paths', async () => {
    const many = Object.fromEntries(Array.from({ length: MAX_INPUT_PATHS + 5 }, (_, i) => [`k${i}`, i]));
    const template = Object.keys(many).map((k) => `{{ config.${k} }}`).join('');
    const { paths } = await readPaths({ 'p.njk': `${template}{{ params.id }}` }, 'p.njk', { ...VARIABLES, config: many });
    expect(paths).toEqual([['config'], ['params']]);
  });
});
