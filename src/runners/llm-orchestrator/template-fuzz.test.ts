/**
 * A grammar-based fuzzer of the template sandbox. It writes templates from
 * the Jinja grammar nunjucks parses (outputs, set, if/elif/else, for, macros,
 * call blocks, include, import, from-import, extends and blocks, filter
 * blocks, raw, comments, switch, nunjucks' async tags) with names, filters,
 * tests, operators and literals drawn partly from hostile fragments: quotes,
 * backticks, backslashes, `${`, comment and line terminators, and snippets of
 * JavaScript that call a canary. One of them is also pasted at a random place
 * of the main file, so every token position, and the inside of every token,
 * gets one.
 *
 * Every template is rendered as the orchestrator renders it (PromptTemplates,
 * files read through MCP, includes included, half the time with the input
 * tracker of optimized components). It must either be refused with
 * UHLP_PROMPT_TEMPLATE_INVALID naming one of its files and a position in it,
 * or render (or fail to render, UHLP_PROMPT_TEMPLATE_ERROR) without any code
 * running that the template runtime did not write. What would show such code:
 *
 * - the canary `__uhlpCanary`, a global function every JavaScript snippet calls;
 * - traps on the Function constructors (`Function.prototype.constructor` of
 *   every kind of function, the global `Function`) and on `eval`, armed while a
 *   template renders: a template reaching one of them would call the trap;
 * - the own keys of the built-in prototypes, unchanged after every case.
 *
 * After each case another template of the same revision renders as it did
 * before: no render changed the filters, tests or globals others render with.
 *
 * The seed and the number of cases are fixed, so CI runs the same cases every
 * time; UHLP_TEMPLATE_FUZZ_SEED and UHLP_TEMPLATE_FUZZ_RUNS explore others.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FAKE_REVISION, FakeTools } from '../../../test/helpers/fake-tools.js';
import { DefinitionFiles } from './definition-files.js';
import { PromptTemplateError, PromptTemplates } from './prompt-templates.js';
import { TemplateInputs } from './template-inputs.js';
import { TEMPLATE_VOCABULARY } from './template-library.js';

const SEED = Number(process.env['UHLP_TEMPLATE_FUZZ_SEED'] ?? 20_240_024);
const RUNS = Number(process.env['UHLP_TEMPLATE_FUZZ_RUNS'] ?? 2_000);

// --- the canary and the traps ---------------------------------------------

const hits: string[] = [];

declare global {
  var __uhlpCanary: (() => void) | undefined;
}
globalThis.__uhlpCanary = (): void => void hits.push('the canary was called');

const FUNCTION_KINDS = [
  function () {},
  async function () {},
  function* () {},
  async function* () {},
].map((fn) => Object.getPrototypeOf(fn) as object);
const realFunction = globalThis.Function;
const realEval = globalThis.eval;

/** A stand-in that records being called or constructed (`new Function(...)`), and answers a function that does nothing. */
function trap(what: string): () => () => undefined {
  return function trapped() {
    hits.push(`${what} was reached`);
    return () => undefined;
  };
}

/** Sets the traps; returns what takes them away. */
function arm(): () => void {
  const saved = FUNCTION_KINDS.map((prototype) => Object.getOwnPropertyDescriptor(prototype, 'constructor')!);
  FUNCTION_KINDS.forEach((prototype) => Object.defineProperty(prototype, 'constructor', { value: trap('a Function constructor'), writable: true, configurable: true }));
  globalThis.Function = trap('the global Function') as unknown as FunctionConstructor;
  globalThis.eval = trap('eval') as unknown as typeof eval;
  return () => {
    FUNCTION_KINDS.forEach((prototype, i) => Object.defineProperty(prototype, 'constructor', saved[i]!));
    globalThis.Function = realFunction;
    globalThis.eval = realEval;
  };
}

const PROTOTYPES: ReadonlyArray<[string, object]> = [
  ['Object.prototype', Object.prototype],
  ['Array.prototype', Array.prototype],
  ['String.prototype', String.prototype],
  ['Number.prototype', Number.prototype],
  ['Boolean.prototype', Boolean.prototype],
  ['Function.prototype', Function.prototype],
  ['globalThis', globalThis],
];

function prototypeKeys(): Record<string, string[]> {
  return Object.fromEntries(PROTOTYPES.map(([name, object]) => [name, Reflect.ownKeys(object).map(String).sort()]));
}

// --- the grammar -----------------------------------------------------------

/** Pieces that end or escape a JavaScript string, comment or template literal, and JavaScript that calls the canary. */
const HOSTILE: readonly string[] = [
  '"', "'", '`', '\\', '\\"', "\\'", '\\`', '\\\\', '${', '}', ';', '&', '?', '$', '\n', '\r', '\u2028', '\u2029', '*/', '/*', '//', '<!--', '-->',
  '#}', '%}', '}}', '{{', '{%', '{#', '-%}', '{%-', '(', ')', '[', ']', ',', '.', '|', '=', '~', '!',
  'x"&&__uhlpCanary``&&"',
  'x"&&Function`__uhlpCanary\\x28\\x29```&&"',
  "x'&&__uhlpCanary``&&'",
  '`)));//',
  '`));//',
  '`);//',
  '"+__uhlpCanary()+"',
  "'+__uhlpCanary()+'",
  '`+__uhlpCanary()+`',
  '${__uhlpCanary()}',
  '\\"+__uhlpCanary()+\\"',
  '\\\\"+__uhlpCanary()+`',
  '");__uhlpCanary();//',
  '"]);__uhlpCanary();//',
  '\\");__uhlpCanary();//',
  '*/__uhlpCanary()/*',
  '\n__uhlpCanary()//',
  '\u2028__uhlpCanary()//',
  'x`;__uhlpCanary();`',
  'a,__uhlpCanary``',
  'constructor', '__proto__', 'prototype', 'valueOf', 'toString', 'hasOwnProperty', '__defineGetter__', 'caller', 'arguments',
];

/**
 * Names that are JavaScript calling the canary once nunjucks' compiler pastes
 * them between double quotes: no space and no character its lexer ends a name at.
 */
const NAME_PAYLOADS: readonly string[] = [
  'x"&&__uhlpCanary``&&"',
  'x"||__uhlpCanary``||"',
  'x"+__uhlpCanary``+"',
  'x"&&Function`__uhlpCanary\\x28\\x29```&&"',
  'x"&&eval`__uhlpCanary\\x28\\x29`&&"',
  '"&&__uhlpCanary``&&"',
  'x"?__uhlpCanary``:"',
];

const IDENTIFIERS: readonly string[] = [
  'x', 'y', 'items', 'body', 'name', 'file', 'loop', 'caller', 'range', 'cycler', 'joiner', 'm', 'q', 'k', 'v', 'i', 'super',
  'env', 'ctx', 'context', 'process', 'Function', 'globalThis', 'this', 'require', 'eval', 'length', 'index', 'first', 'a', 'b',
];

const OPERATORS: readonly string[] = ['+', '-', '*', '/', '//', '%', '**', '~', '==', '!=', '===', '!==', '<', '>', '<=', '>=', 'and', 'or', 'in', 'not in'];
const NOT_OPERATORS: readonly string[] = [';', '&', '?', '$', '&&', '||', '|', '.', ',', ':', '=', '`', '"', '\\'];

const hostile = fc.constantFrom(...HOSTILE);
const identifier = fc.constantFrom(...IDENTIFIERS);
const text = fc.array(fc.oneof(hostile, fc.constantFrom('Hello ', '\n', ' ', 'x', '{', '}')), { maxLength: 3 }).map((parts) => parts.join(''));
const stringContent = fc.array(fc.oneof(hostile, fc.constantFrom('a', ' ', 'inc.njk', '%}', '\\n', '\\u0041')), { maxLength: 3 }).map((parts) => parts.join(''));
/** Hostile text between quotes, as it comes (often ending the string early) or escaped (so the string holds it). */
const stringLiteral = fc.oneof(
  fc.tuple(fc.constantFrom('"', "'"), stringContent).map(([quote, content]) => `${quote}${content}${quote}`),
  stringContent.map((content) => JSON.stringify(content)),
);
/**
 * The templates of one file: `names` are the template files it may include,
 * import or extend; one name, filter or test in `hostility` is a hostile
 * fragment (the others are identifiers and known filters and tests, so that
 * enough templates pass the grammar to test what happens when they render).
 */
function templateGrammar(names: readonly string[], hostility: number): { body: fc.Arbitrary<string>; expression: fc.Arbitrary<string> } {
  const name = fc.oneof(
    { weight: 2 * (hostility - 1), arbitrary: identifier },
    { weight: 1, arbitrary: fc.constantFrom(...NAME_PAYLOADS) },
    { weight: 1, arbitrary: fc.oneof(hostile, stringLiteral) },
  );
  const filterName = fc.oneof({ weight: hostility - 1, arbitrary: fc.constantFrom(...TEMPLATE_VOCABULARY.filters) }, { weight: 1, arbitrary: name });
  const testName = fc.oneof({ weight: hostility - 1, arbitrary: fc.constantFrom(...TEMPLATE_VOCABULARY.tests) }, { weight: 1, arbitrary: name });
  const operator = fc.oneof({ weight: hostility - 1, arbitrary: fc.constantFrom(...OPERATORS) }, { weight: 1, arbitrary: fc.constantFrom(...NOT_OPERATORS) });
  // Tags nunjucks does not take here, or the grammar refuses.
  const strayTag = fc.constantFrom('ifAsync', 'asyncEach', 'asyncAll', 'verbatim', 'endif', 'elif', 'else', 'call', 'super');
  const atom = fc.oneof(
    { weight: 4, arbitrary: name },
    { weight: 3, arbitrary: stringLiteral },
    { weight: 2, arbitrary: fc.integer({ min: -3, max: 40 }).map(String) },
    { weight: 1, arbitrary: fc.constantFrom('1.5', 'true', 'false', 'none', 'r/a.b/g', 'range(100001)', '""', "''") },
  );
  const templateName = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...names.map((n) => JSON.stringify(n)), '"missing.njk"', '"../up.njk"', '"/etc/passwd"', 'file') },
    { weight: 1, arbitrary: stringLiteral },
    { weight: 1, arbitrary: name },
  );
  const tree = fc.letrec<{ expression: string; args: string; params: string; statement: string; body: string }>((tie) => ({
    expression: fc.oneof(
      { maxDepth: 4, depthSize: 'small' },
      atom,
      fc.tuple(tie('expression'), operator, tie('expression')).map(([a, op, b]) => `${a} ${op} ${b}`),
      fc.tuple(fc.constantFrom('not ', '-', '+'), tie('expression')).map(([op, e]) => `${op}${e}`),
      fc.tuple(tie('expression'), name).map(([e, n]) => `${e}.${n}`),
      fc.tuple(tie('expression'), tie('expression')).map(([e, key]) => `${e}[${key}]`),
      fc.tuple(tie('expression'), tie('args')).map(([callee, args]) => `${callee}(${args})`),
      fc.tuple(tie('expression'), filterName, fc.option(tie('args'))).map(([e, f, args]) => (args === null ? `${e} | ${f}` : `${e} | ${f}(${args})`)),
      fc.tuple(tie('expression'), fc.constantFrom('is', 'is not'), testName, fc.option(tie('expression'))).map(([e, is, t, arg]) => (arg === null ? `${e} ${is} ${t}` : `${e} ${is} ${t}(${arg})`)),
      fc.tuple(tie('expression'), tie('expression'), fc.option(tie('expression'))).map(([a, cond, b]) => (b === null ? `${a} if ${cond}` : `${a} if ${cond} else ${b}`)),
      fc.array(tie('expression'), { maxLength: 3 }).map((list) => `[${list.join(', ')}]`),
      fc.array(fc.tuple(fc.oneof(name, stringLiteral), tie('expression')), { maxLength: 2 }).map((pairs) => `{${pairs.map(([key, value]) => `${key}: ${value}`).join(', ')}}`),
      tie('expression').map((e) => `(${e})`),
    ),
    args: fc.array(fc.oneof(tie('expression'), fc.tuple(name, tie('expression')).map(([n, e]) => `${n}=${e}`)), { maxLength: 3 }).map((list) => list.join(', ')),
    params: fc.array(fc.oneof(name, fc.tuple(name, atom).map(([n, e]) => `${n}=${e}`)), { maxLength: 3 }).map((list) => list.join(', ')),
    statement: fc.oneof(
      { maxDepth: 3, depthSize: 'small' },
      text,
      fc.tuple(fc.constantFrom('{{', '{{-'), tie('expression'), fc.constantFrom('}}', '-}}')).map(([open, e, close]) => `${open} ${e} ${close}`),
      fc.tuple(name, tie('expression')).map(([n, e]) => `{% set ${n} = ${e} %}`),
      fc.tuple(name, name, tie('expression')).map(([a, b, e]) => `{% set ${a}, ${b} = ${e} %}`),
      fc.tuple(name, tie('body')).map(([n, body]) => `{% set ${n} %}${body}{% endset %}`),
      fc.tuple(tie('expression'), tie('body'), fc.option(fc.tuple(tie('expression'), tie('body'))), fc.option(tie('body'))).map(
        ([cond, body, elif, otherwise]) => `{% if ${cond} %}${body}${elif ? `{% elif ${elif[0]} %}${elif[1]}` : ''}${otherwise !== null ? `{% else %}${otherwise}` : ''}{% endif %}`,
      ),
      fc.tuple(fc.oneof(name, fc.tuple(name, name).map(([a, b]) => `${a}, ${b}`)), tie('expression'), tie('body'), fc.option(tie('body'))).map(
        ([target, list, body, otherwise]) => `{% for ${target} in ${list} %}${body}${otherwise !== null ? `{% else %}${otherwise}` : ''}{% endfor %}`,
      ),
      fc.tuple(name, tie('params'), tie('body')).map(([n, params, body]) => `{% macro ${n}(${params}) %}${body}{% endmacro %}`),
      fc.tuple(tie('params'), fc.oneof(name, tie('expression')), tie('args'), tie('body')).map(([params, callee, args, body]) => `{% call(${params}) ${callee}(${args}) %}${body}{% endcall %}`),
      fc.tuple(templateName, fc.boolean()).map(([t, ignore]) => `{% include ${t}${ignore ? ' ignore missing' : ''} %}`),
      fc.tuple(templateName, name, fc.constantFrom('', ' with context', ' without context')).map(([t, n, context]) => `{% import ${t} as ${n}${context} %}`),
      fc.tuple(templateName, name, name, name).map(([t, a, b, alias]) => `{% from ${t} import ${a}, ${b} as ${alias} %}`),
      fc.tuple(name, tie('body')).map(([n, body]) => `{% block ${n} %}${body}{% endblock %}`),
      fc.tuple(filterName, tie('body')).map(([f, body]) => `{% filter ${f} %}${body}{% endfilter %}`),
      text.map((t) => `{% raw %}${t}{% endraw %}`),
      text.map((t) => `{# ${t} #}`),
      fc.tuple(tie('expression'), tie('expression'), tie('body'), tie('body')).map(([e, c, body, otherwise]) => `{% switch ${e} %}{% case ${c} %}${body}{% default %}${otherwise}{% endswitch %}`),
      fc.tuple(fc.oneof({ weight: hostility, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: strayTag }), tie('expression')).map(([tag, e]) => (tag === null ? `{{ ${e} }}` : `{% ${tag} ${e} %}`)),
    ),
    body: fc.array(tie('statement'), { maxLength: 3 }).map((list) => list.join('')),
  }));
  return { body: tree.body, expression: tree.expression };
}

/** `value` `times` in `outOf + times`, else null. */
function sometimes<T>(times: number, outOf: number, value: fc.Arbitrary<T>): fc.Arbitrary<T | null> {
  return fc.oneof({ weight: outOf, arbitrary: fc.constant(null) }, { weight: times, arbitrary: value });
}

interface Case {
  readonly files: Readonly<Record<string, string>>;
  readonly tracked: boolean;
}

/** Cases whose names, filters and tests are hostile one time in `hostility`. */
function casesOf(hostility: number): fc.Arbitrary<Case> {
  const macros = templateGrammar([], hostility);
  const included = templateGrammar(['lib/m.njk'], hostility);
  const main = templateGrammar(['inc.njk', './inc.njk', 'lib/m.njk'], hostility);
  return fc
  .record({
    extendsFrom: sometimes(1, 4, fc.constantFrom('"inc.njk"', '"lib/m.njk"', '"missing.njk"', 'file')),
    main: main.body,
    inc: included.body,
    lib: macros.body,
    insert: sometimes(1, hostility === 5 ? 1 : 9, fc.tuple(hostile, fc.nat())),
    tracked: fc.boolean(),
  })
  .map(({ extendsFrom, main: body, inc, lib, insert, tracked }) => {
    let p = `${extendsFrom !== null ? `{% extends ${extendsFrom} %}` : ''}${body}`;
    if (insert !== null) {
      const at = insert[1] % (p.length + 1);
      p = `${p.slice(0, at)}${insert[0]}${p.slice(at)}`;
    }
    return { files: { 'p.njk': p, 'inc.njk': inc, 'lib/m.njk': lib }, tracked };
  });
}

const cases = fc.oneof(casesOf(5), casesOf(60));

// --- the render ------------------------------------------------------------

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<PropertyKey, unknown>)[key]);
  }
  return value;
}

/** Render variables as a request gives them: JSON, some of it hostile. */
const VARIABLES = deepFreeze({
  x: { a: 1, b: 'two', c: [1, 2, 3] },
  y: 'text with "quotes" and `backticks` and \\ and ${x}',
  items: [
    { n: 'a', on: true },
    { n: 'b', on: false },
  ],
  body: JSON.parse('{"text":"hi","__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"meta":{"tags":["a","b"]}}') as unknown,
  name: '"+__uhlpCanary()+"',
  file: 'inc.njk',
  k: 'a',
  v: 'constructor',
});

type Outcome = 'refused' | 'rendered' | 'failed';

/** Another component's template of the same revision, rendered after each case: what it renders with must not have changed. */
const VICTIM = '{{ "abc" | upper }}|{{ range(3) | join(",") }}|{{ [3, 1, 2] | sort | join }}|{{ "a b" | title }}|{% set c = cycler(1, 2) %}{{ c.next() }}{{ c.next() }}|{{ 4 is even }}';
const VICTIM_TEXT = 'ABC|0,1,2|123|A B|12|true';

async function renderCase(testCase: Case): Promise<Outcome> {
  const templates = new PromptTemplates(new DefinitionFiles());
  const scope = { appId: 'fuzz', revision: FAKE_REVISION, tools: new FakeTools({ files: { ...testCase.files, 'victim.njk': VICTIM } }) };
  const inputs = testCase.tracked ? new TemplateInputs(VARIABLES) : undefined;
  const before = prototypeKeys();
  hits.length = 0;
  const disarm = arm();
  let error: unknown;
  try {
    await templates.render('p.njk', VARIABLES, scope, inputs?.observe);
  } catch (thrown) {
    error = thrown;
  } finally {
    disarm();
  }
  expect(hits, 'code the template runtime did not write ran').toEqual([]);
  expect(prototypeKeys(), 'a built-in prototype changed').toEqual(before);
  expect(await templates.render('victim.njk', {}, scope), 'the render changed what another renders with').toBe(VICTIM_TEXT);
  if (error === undefined) return 'rendered';
  expect(error).toBeInstanceOf(PromptTemplateError);
  const failure = error as PromptTemplateError;
  if (failure.code !== 'UHLP_PROMPT_TEMPLATE_INVALID') return 'failed';
  // A refusal names one of the files and a position in it.
  expect(Object.keys(testCase.files)).toContain(failure.file);
  const lines = testCase.files[failure.file]!.split(/\r\n|\r|\n/).length;
  expect(failure.line, failure.message).toBeGreaterThanOrEqual(1);
  expect(failure.line, failure.message).toBeLessThanOrEqual(lines);
  expect(failure.column, failure.message).toBeGreaterThanOrEqual(1);
  return 'refused';
}

describe('the template fuzzer', () => {
  it(`refuses or renders ${RUNS} generated templates (seed ${SEED}) with no code of their own running`, async () => {
    const counts: Record<Outcome, number> = { refused: 0, rendered: 0, failed: 0 };
    const started = performance.now();
    await fc.assert(
      fc.asyncProperty(cases, async (testCase) => {
        counts[await renderCase(testCase)]++;
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(`template fuzzer: ${RUNS} cases, seed ${SEED}, ${seconds} s: ${counts.refused} refused (UHLP_PROMPT_TEMPLATE_INVALID), ${counts.rendered} rendered, ${counts.failed} failed to render (UHLP_PROMPT_TEMPLATE_ERROR)`);
    // The generator reaches all three outcomes, so the property is not vacuous.
    expect(Math.min(counts.refused, counts.rendered, counts.failed)).toBeGreaterThan(RUNS / 50);
  }, 120_000);
});
