/**
 * Hostile templates: none reaches process, require, a constructor, a global or
 * the file system. Each payload, if it escaped, would set a canary on
 * globalThis; every test checks the canary too, not only the error.
 */
import nunjucks from 'nunjucks';
import { afterEach, describe, expect, it } from 'vitest';
import { FAKE_REVISION, FakeTools } from '../../test/helpers/fake-tools.js';
import { DefinitionFiles } from './definition-files.js';
import { PromptTemplateError, PromptTemplates } from './prompt-templates.js';
import { createSandboxedEnvironment, MAX_RANGE } from './template-sandbox.js';

const CANARY = '__uhlpTemplateEscape';
const ESCAPE = `"globalThis.${CANARY} = 1; return process"`;

declare global {
  var __uhlpTemplateEscape: number | undefined;
}

afterEach(() => {
  expect(globalThis[CANARY]).toBeUndefined();
  delete globalThis[CANARY];
});

async function render(template: string, variables: Record<string, unknown> = {}, files: Record<string, string> = {}): Promise<string> {
  const templates = new PromptTemplates(new DefinitionFiles());
  return templates.render('p.njk', variables, { appId: 'app', revision: FAKE_REVISION, tools: new FakeTools({ files: { ...files, 'p.njk': template } }) });
}

async function refused(template: string, variables: Record<string, unknown> = { x: { a: 1 }, items: [1] }): Promise<string> {
  const error = await render(template, variables).then(
    (text) => new Error(`rendered: ${text}`),
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(PromptTemplateError);
  return (error as PromptTemplateError).reason;
}

describe('the template sandbox', () => {
  const payloads: Array<[name: string, template: string, cause: RegExp]> = [
    ['a global function\'s constructor', `{{ range.constructor(${ESCAPE})().pid }}`, /"constructor" is not allowed/],
    ['the context\'s constructor', `{{ constructor.constructor(${ESCAPE})().pid }}`, /"constructor" is not allowed/],
    ['a variable\'s constructor', `{{ x.constructor.constructor(${ESCAPE})() }}`, /"constructor" is not allowed/],
    ['a string\'s constructor', `{{ "".constructor.constructor(${ESCAPE})() }}`, /"constructor" is not allowed/],
    ['a subscripted constructor', `{{ x["constructor"]["constructor"](${ESCAPE})() }}`, /"constructor" is not allowed/],
    ['a computed constructor', `{% set k = "constr" ~ "uctor" %}{{ x[k][k](${ESCAPE})() }}`, /"constructor" is not allowed/],
    ['a constructor named by a macro', `{% macro k() %}constructor{% endmacro %}{{ cycler[k()](${ESCAPE})() }}`, /"constructor" is not allowed/],
    ['a computed prototype', `{{ items["__pro" ~ "to__"] }}`, /"__proto__" is not allowed/],
    ['the prototype', '{{ x.__proto__ }}', /"__proto__" is not allowed/],
    ['a getter lookup', '{{ x.__lookupGetter__("__proto__") }}', /"__lookupGetter__" is not allowed/],
    ['a getter definition', '{{ x.__defineGetter__("a", range) }}', /"__defineGetter__" is not allowed/],
    ['a macro\'s caller', '{% macro m() %}{{ caller.constructor }}{% endmacro %}{% call m() %}x{% endcall %}', /"constructor" is not allowed/],
    ['setting the prototype', '{% set __proto__ = x %}', /"__proto__" is not allowed/],
    ['a dict with a prototype', '{{ {"__proto__": x} }}', /"__proto__" is not allowed/],
    ['a filter from Object.prototype', '{{ "a" | constructor }}', /filter not found: constructor|"constructor" is not allowed/],
    ['a filter defining getters', '{{ "lookup" | __defineGetter__(range) }}', /"__defineGetter__" is not allowed|filter not found/],
    ['a test from Object.prototype', '{% if x is hasOwnProperty %}y{% endif %}', /test not found: hasOwnProperty/],
    ['a range past the cap', `{{ range(${MAX_RANGE + 1}) | length }}`, /range\(\) makes at most/],
    ['a file outside the app', '{% include "../../../../etc/passwd" %}', /leaves the app directory/],
    ['an absolute file', '{% include "/proc/self/environ" %}', /absolute/],
  ];
  it.each(payloads)('refuses %s', async (_name, template, cause) => {
    expect(await refused(template)).toMatch(cause);
  });

  it('has no process, require, module, global or Function to name: they are undefined', async () => {
    expect(await render('[{{ process }}][{{ require }}][{{ module }}][{{ global }}][{{ globalThis }}][{{ Function }}][{{ eval }}][{{ this }}]')).toBe('[][][][][][][][]');
    expect(await refused(`{{ require("node:fs").readFileSync("/etc/passwd") }}`)).toMatch(/Unable to call `require`/);
  });

  it('still lets templates use methods and attributes of their data', async () => {
    expect(await render('{{ s.toUpperCase() }} {{ items.join("-") }} {{ items.length }} {{ x.hasOwnProperty("a") }} {{ range(3) | join }}', { s: 'ab', items: [1, 2], x: { a: 1 } })).toBe(
      'AB 1-2 2 true 012',
    );
  });

  it('fences the runtime itself: a template compiled without the syntax check cannot escape either', () => {
    const env = createSandboxedEnvironment(new nunjucks.FileSystemLoader([]));
    for (const template of [`{{ range.constructor(${ESCAPE})() }}`, `{{ constructor.constructor(${ESCAPE})() }}`, '{{ x.__proto__ }}']) {
      expect(() => env.renderString(template, { x: {} })).toThrow(/is not allowed in templates/);
    }
    // The runtime is patched for the whole process: a stock environment is fenced too.
    expect(() => new nunjucks.Environment().renderString(`{{ range.constructor(${ESCAPE})() }}`, {})).toThrow(/is not allowed in templates/);
  });
});
