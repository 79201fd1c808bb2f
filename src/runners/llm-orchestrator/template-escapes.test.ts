/**
 * The template escapes of issue 24, each as it was reported and in the other
 * places nunjucks' compiler pastes a name into the code it generates. Every
 * payload, had it run, would set a canary on globalThis; each test checks the
 * canary first, then that the sandbox refused the template with
 * UHLP_PROMPT_TEMPLATE_INVALID naming the file, line and column.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FAKE_REVISION, FakeTools } from '../../../test/helpers/fake-tools.js';
import { DefinitionFiles } from './definition-files.js';
import { PromptTemplateError, PromptTemplates } from './prompt-templates.js';

const CANARY = '__uhlpTemplateEscape';
const BT = '`';
/** JavaScript that sets the canary, written without a character nunjucks' lexer ends a name at (`.`, `=`, `(`, spaces). */
const SET_CANARY = `Function${BT}globalThis\\x2e${CANARY}\\x3dprocess\\x2epid${BT}${BT}${BT}`;

declare global {
  var __uhlpTemplateEscape: number | undefined;
}

afterEach(() => {
  delete globalThis[CANARY];
});

function scope(files: Record<string, string>): { appId: string; revision: string; tools: FakeTools } {
  return { appId: 'app', revision: FAKE_REVISION, tools: new FakeTools({ files }) };
}

/** Renders `p.njk` of `files`: the text, or the error. */
async function attempt(files: Record<string, string>, templates = new PromptTemplates(new DefinitionFiles())): Promise<string | unknown> {
  return templates.render('p.njk', { x: { a: 1 } }, scope(files)).then(
    (text) => text,
    (error: unknown) => error,
  );
}

describe('issue 24, item 1: a template runs no JavaScript of its own', () => {
  const payloads: Array<[where: string, template: string, line: number, column: number]> = [
    ['a name in an output', `{{ x"&&${SET_CANARY}&&" }}`, 1, 4],
    ['a name in a set', `{% set y = x"&&${SET_CANARY}&&" %}`, 1, 12],
    ['the test of an is', `{% if 1 is x"&&${SET_CANARY}&&" %}{% endif %}`, 1, 12],
    ['a name on a later line', `text\n  {{ x"&&${SET_CANARY}&&" }}`, 2, 6],
    // The callee of a call is pasted as `x["…"]`, with its quotes escaped but not its backslashes.
    ['the string subscript of a callee', `{{ x["\\\\\\"+(globalThis.${CANARY}=1)+${BT}"]() }}{{ "${BT})));//" }}`, 1, 6],
    ['an import target', `{% import "m.njk" as "x\\");globalThis.${CANARY}=1;//" %}`, 1, 22],
    ['a from-import alias', `{% from "m.njk" import a as "x\\");globalThis.${CANARY}=1;//" %}`, 1, 29],
    ['a macro name', `{% macro "m\\");globalThis.${CANARY}=1;//"() %}{% endmacro %}`, 1, 10],
    // A test's arguments were compiled one after the other with no comma: `"a"["constructor"]["constructor"](…)`.
    ['the arguments of a test', `{{ 1 is eq("a", ["constr" ~ "uctor"], ["constr" ~ "uctor"], ("globalThis.${CANARY} = 1"), ("")) }}`, 1, 11],
  ];

  it.each(payloads)('refuses JavaScript in %s', async (_where, template, line, column) => {
    const outcome = await attempt({ 'p.njk': template, 'm.njk': '{% macro a() %}A{% endmacro %}' });
    expect(globalThis[CANARY], 'the payload ran').toBeUndefined();
    expect(outcome).toBeInstanceOf(PromptTemplateError);
    const error = outcome as PromptTemplateError;
    expect({ code: error.code, file: error.file, line: error.line, column: error.column }).toEqual({ code: 'UHLP_PROMPT_TEMPLATE_INVALID', file: 'p.njk', line, column });
  });

  it('refuses the same in an included, imported or extended file, naming that file', async () => {
    for (const tag of ['{% include "inc/q.njk" %}', '{% import "inc/q.njk" as q %}', '{% from "inc/q.njk" import z %}', '{% extends "inc/q.njk" %}']) {
      const outcome = await attempt({ 'p.njk': `a\n${tag}`, 'inc/q.njk': `\n\n {{ x"&&${SET_CANARY}&&" }}` });
      expect(globalThis[CANARY], tag).toBeUndefined();
      expect(outcome, tag).toMatchObject({ code: 'UHLP_PROMPT_TEMPLATE_INVALID', file: 'inc/q.njk', line: 3, column: 5 });
    }
  });
});

describe('issue 24, item 1: compiled templates run in strict mode', () => {
  // nunjucks declares the variable of an import inside a {% set %} block's
  // function and assigns it outside: without strict mode that made a global.
  const LEAK = '{% set z %}{% import "m.njk" as q %}{% endset %}{% set q = secret %}';
  const READ = '{% set z %}{% import "m.njk" as q %}{% endset %}[{{ q }}]';

  it('one render cannot leave data in a global for another to read', async () => {
    const before = Object.getOwnPropertyNames(globalThis);
    const templates = new PromptTemplates(new DefinitionFiles());
    const files = { 'leak.njk': LEAK, 'read.njk': READ, 'm.njk': '{% macro a() %}A{% endmacro %}' };
    await templates.render('leak.njk', { secret: 'SECRET' }, scope(files)).catch(() => undefined);
    expect(Object.getOwnPropertyNames(globalThis).filter((name) => !before.includes(name))).toEqual([]);
    const read = await templates.render('read.njk', {}, scope(files)).catch((error: unknown) => error);
    expect(read).not.toContain('SECRET');
    expect(read).toMatchObject({ code: 'UHLP_PROMPT_TEMPLATE_ERROR', reason: expect.stringMatching(/is not defined/) });
  });
});

describe('issue 24, item 2: no template reaches the Context or the Environment', () => {
  it('refuses valueOf(), which returned the Context, and every other inherited name', async () => {
    for (const [template, column] of [
      ['{% set c = valueOf() %}{{ c.env.addFilter("upper", c.env.getFilter("lower")) }}', 12],
      ['{{ valueOf().env.renderString("{{ 7 * 6 }}") }}', 4],
      ['{{ toString() }}{{ hasOwnProperty("x") }}', 4],
      ['{% set c = x.valueOf() %}', 14],
    ] as const) {
      const outcome = await attempt({ 'p.njk': template });
      expect(outcome, template).toMatchObject({ code: 'UHLP_PROMPT_TEMPLATE_INVALID', file: 'p.njk', line: 1, column, reason: expect.stringMatching(/"(valueOf|toString)" is not allowed/) });
    }
  });

  it('one render cannot change the filters or globals another render uses', async () => {
    const templates = new PromptTemplates(new DefinitionFiles());
    const attacks = [
      '{% set c = valueOf() %}{{ c.env.addFilter("upper", c.env.getFilter("lower")) }}{{ c.env.addGlobal("range", c.env.getFilter("lower")) }}',
      '{% set c = valueOf() %}{% set f = c.env.filters %}{{ c.env.addFilter("upper", f.lower) }}',
    ];
    for (const attack of attacks) await attempt({ 'p.njk': attack, 'victim.njk': '{{ "abc"|upper }} {{ range(3) | join(",") }}' }, templates);
    const victim = await templates.render('victim.njk', {}, scope({ 'victim.njk': '{{ "abc"|upper }} {{ range(3) | join(",") }}' }));
    expect(victim).toBe('ABC 0,1,2');
  });
});
