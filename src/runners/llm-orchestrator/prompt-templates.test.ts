import { describe, expect, it } from 'vitest';
import { FAKE_REVISION, FakeTools } from '../../../test/helpers/fake-tools.js';
import { DefinitionFiles, READ_TOOL } from './definition-files.js';
import { PromptTemplateError, PromptTemplates } from './prompt-templates.js';

function setup(files: Record<string, string>): { templates: PromptTemplates; tools: FakeTools; render: (file: string, variables?: Record<string, unknown>) => Promise<string> } {
  const templates = new PromptTemplates(new DefinitionFiles());
  const tools = new FakeTools({ files });
  return { templates, tools, render: (file, variables = {}) => templates.render(file, variables, { appId: 'app', revision: FAKE_REVISION, tools }) };
}

async function failure(promise: Promise<unknown>): Promise<PromptTemplateError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(PromptTemplateError);
  return error as PromptTemplateError;
}

describe('PromptTemplates', () => {
  it('renders Jinja2 syntax with no escaping: prompts are not HTML', async () => {
    const { render } = setup({ 'p.njk': '{% for i in items %}{{ i | upper }}{% if not loop.last %}, {% endif %}{% endfor %} <{{ tag }}> & {{ "x" ~ n }}' });
    expect(await render('p.njk', { items: ['a', 'b'], tag: '<b>"q"</b>', n: 1 })).toBe('A, B <<b>"q"</b>> & x1');
  });

  it('includes, imports and extends app files by app-relative path, and relative to the template with ./', async () => {
    const { render, tools } = setup({
      'prompts/main.njk': '{% extends "prompts/base.njk" %}{% block body %}{% include "prompts/preamble.njk" %}|{% import "macros/m.njk" as m %}{{ m.hi(name) }}|{% from "./parts/x.njk" import x %}{{ x() }}{% endblock %}',
      'prompts/base.njk': '[{% block body %}{% endblock %}]',
      'prompts/preamble.njk': 'You are {{ name }}.',
      'macros/m.njk': '{% macro hi(who) %}hi {{ who }}{% endmacro %}',
      'prompts/parts/x.njk': '{% macro x() %}X{% endmacro %}',
    });
    expect(await render('prompts/main.njk', { name: 'Ada' })).toBe('[You are Ada.|hi Ada|X]');
    // Every file was read once through MCP; the next render reads nothing.
    expect(tools.callsOf(READ_TOOL).map((args) => args['path']).sort()).toEqual(['macros/m.njk', 'prompts/base.njk', 'prompts/main.njk', 'prompts/parts/x.njk', 'prompts/preamble.njk']);
    const reads = tools.calls.length;
    expect(await render('prompts/main.njk', { name: 'Bo' })).toBe('[You are Bo.|hi Bo|X]');
    expect(tools.calls.length).toBe(reads);
  });

  it('renders the same templates for executions that start at once, each include read once', async () => {
    const { render, tools } = setup({ 'p.njk': '<{% include "a.njk" %}{% include "b.njk" %}>', 'a.njk': 'A{% include "c.njk" %}', 'b.njk': 'B', 'c.njk': 'C' });
    const texts = await Promise.all(Array.from({ length: 8 }, () => render('p.njk')));
    expect(texts).toEqual(Array(8).fill('<ACB>'));
    expect(tools.callsOf(READ_TOOL).map((args) => args['path']).sort()).toEqual(['a.njk', 'b.njk', 'c.njk', 'p.njk']);
  });

  it('drops one line break at the end of a file, as Jinja2 does', async () => {
    const { render } = setup({ 'p.njk': 'a\n{% include "q.njk" %}\nc\n', 'q.njk': 'b\n' });
    expect(await render('p.njk')).toBe('a\nb\nc');
  });

  it('reads a file named by a variable, and one included with "ignore missing" when it exists', async () => {
    const { render } = setup({ 'p.njk': '{% for part in parts %}{% include "parts/" ~ part ~ ".njk" %}{% endfor %}{% include "opt.njk" ignore missing %}{% include "none.njk" ignore missing %}', 'parts/a.njk': 'A', 'parts/b.njk': 'B', 'opt.njk': '!' });
    expect(await render('p.njk', { parts: ['a', 'b', 'a'] })).toBe('ABA!');
  });

  it('keeps what it read per revision: another revision reads again', async () => {
    const templates = new PromptTemplates(new DefinitionFiles());
    const tools = new FakeTools({ files: { 'p.njk': 'x' } });
    await templates.render('p.njk', {}, { appId: 'app', revision: FAKE_REVISION, tools });
    await templates.render('p.njk', {}, { appId: 'app', revision: FAKE_REVISION, tools });
    expect(tools.callsOf(READ_TOOL)).toHaveLength(1);
    // The fake answers every read at FAKE_REVISION: a read for another revision is refused, not kept.
    await expect(templates.render('p.njk', {}, { appId: 'app', revision: 'f'.repeat(40), tools })).rejects.toMatchObject({ reason: expect.stringMatching(/was read at revision/) });
    expect(tools.callsOf(READ_TOOL)).toHaveLength(2);
  });

  describe('errors name the file, the line and the cause, and whether the sandbox refused the template', () => {
    const INVALID = 'UHLP_PROMPT_TEMPLATE_INVALID';
    const ERROR = 'UHLP_PROMPT_TEMPLATE_ERROR';
    const cases: Array<[name: string, files: Record<string, string>, code: string, file: string, line: number | null, cause: RegExp]> = [
      ['a missing template', {}, ERROR, 'p.njk', null, /no file "p.njk".*UHLP_DEFINITION_FILE_NOT_FOUND/],
      ['a syntax error', { 'p.njk': 'one\ntwo {% if %}' }, INVALID, 'p.njk', 2, /unexpected token/],
      ['a syntax error in an included file', { 'p.njk': 'a\n{% include "inc/b.njk" %}', 'inc/b.njk': '\n\n{{ x | }}' }, INVALID, 'inc/b.njk', 3, /expected symbol/],
      ['a missing include', { 'p.njk': 'a\nb\n  {% include "nope.njk" %}' }, ERROR, 'p.njk', 3, /template not found: nope\.njk: .*UHLP_DEFINITION_FILE_NOT_FOUND/],
      ['a missing include of an included file', { 'p.njk': '{% include "q.njk" %}', 'q.njk': '\n{% import "gone.njk" as g %}' }, ERROR, 'q.njk', 2, /template not found: gone\.njk/],
      ['an include leaving the app directory', { 'p.njk': '\n{% include "../other-app/secret.njk" %}' }, ERROR, 'p.njk', 2, /template not found: \.\.\/other-app\/secret\.njk: .*leaves the app directory/],
      ['an absolute include', { 'p.njk': '{% include "/etc/passwd" %}' }, ERROR, 'p.njk', 1, /template not found: \/etc\/passwd: .*absolute/],
      ['a call of something undefined', { 'p.njk': 'one\ntwo\n{{ nothing() }}' }, ERROR, 'p.njk', 3, /Unable to call `nothing`/],
      ['a render error in an included file', { 'p.njk': '{% include "q.njk" %}', 'q.njk': 'q\n{{ x.y.z() }}' }, ERROR, 'q.njk', 2, /Unable to call/],
      ['an unknown filter', { 'p.njk': '\n{{ x | shout }}' }, INVALID, 'p.njk', 2, /filter not found: shout/],
      ['a block defined twice', { 'p.njk': '{% block a %}{% endblock %}{% block a %}{% endblock %}' }, INVALID, 'p.njk', 1, /defined more than once/],
      ['an included file the grammar refuses', { 'p.njk': 'a\n{% include "q.njk" %}', 'q.njk': '\n {{ x.valueOf() }}' }, INVALID, 'q.njk', 2, /the attribute "valueOf" is not allowed/],
      ['a call of a value that is no function', { 'p.njk': '{% set f = x | safe %}\n{{ f() }}' }, ERROR, 'p.njk', 2, /Unable to call `f`, which is not a function/],
      ['a lookup the sandbox refuses while rendering', { 'p.njk': '{% set k = "constr" ~ "uctor" %}\n  {{ x[k] }}' }, INVALID, 'p.njk', 2, /the attribute "constructor" is not allowed in templates/],
    ];
    it.each(cases)('%s', async (_name, files, code, file, line, cause) => {
      const { render } = setup(files);
      const error = await failure(render('p.njk', { x: {} }));
      expect({ code: error.code, file: error.file, line: error.line }).toEqual({ code, file, line });
      if (code === INVALID) expect(error.column).toBeGreaterThanOrEqual(1);
      expect(error.reason).toMatch(cause);
    });
  });

  it('does not keep a read that failed for a reason that may pass', async () => {
    let up = false;
    const files = new DefinitionFiles();
    const templates = new PromptTemplates(files);
    const tools = {
      async call(): Promise<Record<string, unknown>> {
        if (!up) throw new Error('connection refused');
        return { content: 'ok', encoding: 'utf8', revision: FAKE_REVISION };
      },
    };
    await expect(templates.render('p.njk', {}, { appId: 'a', revision: FAKE_REVISION, tools })).rejects.toMatchObject({ file: 'p.njk', reason: /cannot be read: connection refused/ });
    up = true;
    expect(await templates.render('p.njk', {}, { appId: 'a', revision: FAKE_REVISION, tools })).toBe('ok');
  });
});
