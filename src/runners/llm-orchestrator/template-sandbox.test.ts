/**
 * Hostile templates: none reaches process, require, a constructor, a global or
 * the file system. Each payload, if it escaped, would set a canary on
 * globalThis; every test checks the canary too, not only the error.
 */
import nunjucks from 'nunjucks';
import { afterEach, describe, expect, it } from 'vitest';
import { FAKE_REVISION, FakeTools } from '../../../test/helpers/fake-tools.js';
import { DefinitionFiles } from './definition-files.js';
import { PromptTemplateError, PromptTemplates } from './prompt-templates.js';
import { MAX_RANGE } from './template-library.js';
import { createSandboxedEnvironment, nunjucksInternals } from './template-sandbox.js';

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
    expect(await refused(`{{ Function("return process")() }}`)).toMatch(/Unable to call `Function`/);
  });

  it('lets templates read the own data of their values and use filters; values have no methods', async () => {
    const variables = { s: 'ab', items: [1, 2], x: { a: 1 }, rows: [{ n: 'p', on: true }, { n: 'q', on: false }] };
    expect(await render('{{ s | upper }} {{ items | join("-") }} {{ items.length }} {{ s.length }} {{ s[1] }} {{ x.a }} {{ "a" in x }} {{ range(3) | join }}', variables)).toBe('AB 1-2 2 2 b 1 true 012');
    expect(await render('{{ rows | selectattr("on") | join(",", "n") }}|{{ rows | rejectattr("on") | join(",", "n") }}|{{ rows | sum("on") }}', variables)).toBe('p|q|1');
    // Inherited properties are not data: attributes, filter attributes and `in` find own ones only.
    expect(await render('[{{ s.charAt }}][{{ items.map }}][{{ items.filter }}][{{ rows | join(",", "constructor") }}][{{ "toString" in x }}]', variables)).toBe('[][][][,][false]');
    for (const call of ['{{ s.toUpperCase() }}', '{{ items.join("-") }}', '{{ x.a.toFixed(2) }}']) {
      expect(await refused(call, variables)).toMatch(/Unable to call .*values have no methods in templates/);
    }
  });

  it('calls macros, caller and the globals range, cycler and joiner, each with no `this`', async () => {
    const template = [
      '{% macro box(v) %}[{{ v }}{{ caller() if caller }}]{% endmacro %}',
      '{% call box(1) %}!{% endcall %}',
      '{% set c = cycler("a", "b") %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}{{ c.reset() }}{{ c.next() }}',
      '{% set comma = joiner("/") %}{% for i in range(3) %}{{ comma() }}{{ i }}{% endfor %}',
    ].join('');
    expect(await render(template)).toBe('[1!]abaaa0/1/2');
  });

  it('fences every environment of the process: renderString and a stock nunjucks environment get the same rules', () => {
    const env = createSandboxedEnvironment(new nunjucks.FileSystemLoader([]));
    for (const template of [`{{ range.constructor(${ESCAPE})() }}`, `{{ constructor.constructor(${ESCAPE})() }}`, '{{ x.__proto__ }}', '{% set c = valueOf() %}']) {
      expect(() => env.renderString(template, { x: {} })).toThrow(/is not allowed in templates/);
    }
    expect(() => new nunjucks.Environment().renderString(`{{ range.constructor(${ESCAPE})() }}`, {})).toThrow(/is not allowed in templates/);
    expect(() => new nunjucks.Environment().renderString('{{ x"&&Function`1```&&" }}', {})).toThrow(/is not allowed as a name/);
    expect(() => nunjucks.compile('{% import "m" as "a\\");//" %}').render({})).toThrow(/an import name must be a name, not a Literal node/);
  });

  it('hands every render a frozen environment whose tables no render can change', () => {
    const env = createSandboxedEnvironment(new nunjucks.FileSystemLoader([]));
    expect(() => env.addFilter('upper', () => 'hacked')).toThrow(TypeError);
    expect(() => env.addGlobal('range', () => [])).toThrow(TypeError);
    expect(() => {
      (env as unknown as { filters: unknown }).filters = {};
    }).toThrow(TypeError);
    expect(() => {
      (env as unknown as { opts: { autoescape: boolean } }).opts.autoescape = true;
    }).toThrow(TypeError);
    expect(createSandboxedEnvironment(new nunjucks.FileSystemLoader([])).renderString('{{ "abc" | upper }}{{ range(2) | join }}', {})).toBe('ABC01');
    expect(createSandboxedEnvironment(new nunjucks.FileSystemLoader([]))).not.toBe(env);
  });

  describe('the runtime, behind the grammar', () => {
    const runtime = nunjucksInternals.runtime;
    it('calls nothing the template runtime did not make, and gives what it calls no `this`', () => {
      expect(() => runtime.callWrap(Math.max, 'max', {}, [1, 2])).toThrow(/calling `max` .* is not allowed in templates/);
      expect(() => runtime.callWrap(Function, 'f', {}, ['return 1'])).toThrow(/is not allowed in templates/);
      let seen: unknown = 'unset';
      const macro = runtime.makeMacro([], [], function (this: unknown) {
        seen = this;
        return 'ok';
      });
      expect(runtime.callWrap(macro, 'm', { env: 'the Context' }, [])).toBe('ok');
      expect(seen).toBeUndefined();
    });

    it('finds own data properties only: nothing inherited, no getter, nothing of a function', () => {
      const withGetter = Object.defineProperty({}, 'g', { get: () => 'ran', enumerable: true });
      expect(runtime.memberLookup(withGetter, 'g')).toBeUndefined();
      expect(runtime.memberLookup([], 'map')).toBeUndefined();
      expect(runtime.memberLookup(Object.create({ inherited: 1 }), 'inherited')).toBeUndefined();
      expect(runtime.memberLookup('ab', 'slice')).toBeUndefined();
      expect(runtime.memberLookup('ab', 'length')).toBe(2);
      expect(runtime.memberLookup(function named() {}, 'name')).toBeUndefined();
      expect(() => runtime.memberLookup({}, 'constructor')).toThrow(/"constructor" is not allowed/);
      const frame = { lookup: (): undefined => undefined };
      expect(runtime.contextOrFrameLookup({ ctx: { a: 1 } }, frame, 'a')).toBe(1);
      expect(runtime.contextOrFrameLookup({ ctx: Object.create({ inherited: 1 }) as Record<string, unknown> }, frame, 'inherited')).toBeUndefined();
    });
  });
});

describe('filters that would run a value', () => {
  // Render variables are JSON data and hold no function or getter: these reach the filters only if a
  // later caller hands some in, and the filters keep the rule that only template-made functions run.
  it('sorts by an attribute as own data: a getter is not called, and sort keeps its options', async () => {
    let called = 0;
    const sneaky = {
      get n(): string {
        called += 1;
        return 'a';
      },
    };
    expect(await render('{{ rows | sort(attribute="n") | length }}', { rows: [{ n: 'b' }, sneaky, { n: 'A' }] })).toBe('3');
    expect(called).toBe(0);
    expect(await render('{{ rows | sort(attribute="n") | join(",", "n") }}|{{ rows | sort(true, false, "m.n") | join(",", "k") }}|{{ "cba" | sort | join }}|{{ [3, 1, 2] | sort(reverse=true) | join }}', { rows: [{ k: 1, n: 'b', m: { n: 2 } }, { k: 2, n: 'A', m: { n: 3 } }] })).toBe('A,b|2,1|abc|321');
  });

  it('groups by a macro, never by another function, and by an attribute as own data', async () => {
    let called = 0;
    const fn = (): string => {
      called += 1;
      return 'x';
    };
    expect(await refused('{{ rows | groupby(f) | dump }}', { rows: [{ n: 1 }], f: fn })).toMatch(/grouping by a function that is not a macro is not allowed/);
    expect(called).toBe(0);
    expect(await render('{% macro parity(x) %}{{ "even" if x.n is even else "odd" }}{% endmacro %}{% for k, v in rows | groupby(parity) %}{{ k }}={{ v | length }};{% endfor %}', { rows: [{ n: 1 }, { n: 2 }, { n: 3 }] })).toBe('odd=2;even=1;');
    expect(await render('{% for k, v in rows | groupby("g") %}{{ k }}={{ v | join(",", "n") }};{% endfor %}', { rows: [{ g: 'a', n: 1 }, { g: '__proto__', n: 2 }, { g: 'a', n: 3 }] })).toBe('a=1,3;__proto__=2;');
  });

  it('dumps data, and refuses a value whose toJSON or getter JSON.stringify would call', async () => {
    let called = 0;
    const withToJson = { toJSON: (): string => String((called += 1)) };
    const withGetter = {
      get a(): number {
        called += 1;
        return 1;
      },
    };
    expect(await refused('{{ o | dump }}', { o: { inner: withToJson } })).toMatch(/dumping a value whose toJSON is not data or a macro is not allowed/);
    expect(await refused('{{ o | dump }}', { o: [withGetter] })).toMatch(/dumping a value with a getter \("a"\) is not allowed/);
    expect(called).toBe(0);
    expect(await render('{{ o | dump }}', { o: { a: [1, 'x', null], b: { c: true } } })).toBe('{"a":[1,"x",null],"b":{"c":true}}');
  });
});
