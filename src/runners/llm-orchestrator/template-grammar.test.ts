import { describe, expect, it } from 'vitest';
import { MAX_TEMPLATE_DEPTH } from './template-grammar.js';
import { compileTemplate } from './template-sandbox.js';

function problem(source: string): { line: number | null; column: number | null; cause: string } | undefined {
  const compiled = compileTemplate(source, 'p.njk');
  return 'problem' in compiled ? compiled.problem : undefined;
}

describe('the template grammar', () => {
  const allowed: string[] = [
    'text {{ x }} {{ x.a.b }} {{ x["a-b"] }} {{ x[0] }} {{ x[k] }} {{ "s" ~ 1 ~ none ~ true }} {{ -x + +y - --z }}',
    '{{ a and b or not c }} {{ a in b }} {{ a not in b }} {{ 1 < 2 <= 3 == 3 != 4 >= 0 > -1 === 1 !== 2 }} {{ a * b / c // d % e ** f }}',
    '{{ [1, [2]] }} {{ {a: 1, "b c": {d: [x]} } }} {{ (a, b) }} {{ a if b else c }} {{ a if b }}',
    '{{ x | upper | replace("a", "b") | join(",", "n") | default("-", true) | truncate(7, true, "") | dump(2) }}',
    '{% if x is defined %}{% elif x is divisibleby(3) %}{% else %}{% endif %}{% if x is not none %}{% endif %}',
    '{% for i in items %}{{ loop.index }}{% else %}empty{% endfor %}{% for k, v in d %}{% endfor %}{% for a, b, c in rows %}{% endfor %}',
    '{% set a = 1 %}{% set b, c = 2 %}{% set d %}block {{ a }}{% endset %}',
    '{% macro m(a, b=2, c="x") %}{{ a }}{{ caller() if caller }}{% endmacro %}{{ m(1, c=3) }}{% call(v) m(1) %}{{ v }}{% endcall %}',
    '{% import "m.njk" as m %}{% import "m.njk" as n with context %}{% from "m.njk" import a, b as c %}{{ m.a() }}{{ m.b.c(1) }}',
    '{% include "a.njk" %}{% include "b" ~ ".njk" ignore missing %}{% include name %}',
    '{% extends "base.njk" %}{% block body %}{{ super() }}{% endblock %}',
    '{% filter upper %}text{% endfilter %}{% raw %}{{ not parsed }}{% endraw %}{# comment #}',
    '{% switch x %}{% case 1 %}one{% case 2 %}{% default %}other{% endswitch %}',
    '{% set c = cycler("a", "b") %}{{ c.next() }}{{ joiner(",")() }}{{ range(1, 10, 2) | join }}',
  ];
  it.each(allowed)('compiles %s', (source) => {
    expect(problem(source)).toBeUndefined();
  });

  const refused: Array<[source: string, line: number, column: number, cause: RegExp]> = [
    ['{{ x"&&Function`1```&&" }}', 1, 4, /is not allowed as a name/],
    ['\n\n   {{ a.b.c.constructor }}', 3, 13, /the attribute "constructor"/],
    ['{{ x["__proto__"] }}', 1, 6, /the attribute "__proto__"/],
    ['{{ {"__proto__": 1} }}', 1, 5, /the key "__proto__"/],
    ['{{ valueOf() }}', 1, 4, /the name "valueOf"/],
    ['{% set toString = 1 %}', 1, 8, /the name "toString"/],
    ['{{ x | shout }}', 1, 8, /filter not found: shout/],
    ['{{ x | constructor }}', 1, 8, /filter not found: constructor/],
    ['{% if x is hasOwnProperty %}{% endif %}', 1, 12, /test not found: hasOwnProperty/],
    ['{% if x is eq(1, 2) %}{% endif %}', 1, 14, /a test takes one argument/],
    ['{{ r/a/g }}', 1, 4, /regular expressions/],
    ['{% import "m.njk" as "x" %}', 1, 22, /an import name must be a name/],
    ['{% from "m.njk" import a as "x" %}', 1, 29, /an import alias must be a name/],
    ['{% macro "m"() %}{% endmacro %}', 1, 10, /a macro name must be a name/],
    ['{% macro m(a, a) %}{% endmacro %}', 1, 15, /the argument "a" is named twice/],
    ['{% macro m("a"=1) %}{% endmacro %}', 1, 12, /an argument name must be a name/],
    ['{{ x["a b"]() }}', 1, 6, /cannot be part of what a call names/],
    ['{{ x[none]() }}', 1, 6, /cannot be part of what a call names/],
    ['{% block a %}{% endblock %}\n{% block a %}{% endblock %}', 2, 10, /defined more than once/],
    ['{% switch 1 %}{% case 1 %}{% include "a" %}{% endswitch %}', 1, 30, /cannot stand directly in a \{% case %\}/],
    ['{% for i in x %}{% else %}{% import "a" as b %}{% endfor %}', 1, 30, /cannot stand directly in the \{% else %\} of a \{% for %\}/],
    ['{% ifAsync x %}{% endif %}', 1, 4, /the tag ifAsync is not allowed/],
    ['{% asyncEach i in x %}{% endeach %}', 1, 4, /the tag asyncEach is not allowed/],
    ['{{ x', 1, 5, /expected variable end/],
    ['{% call x %}{% endcall %}', 1, 26, /cannot parse the template/],
    [`{{ ${'('.repeat(MAX_TEMPLATE_DEPTH)}1${')'.repeat(MAX_TEMPLATE_DEPTH)} }}`, 1, MAX_TEMPLATE_DEPTH + 4, /nests deeper than 200 levels/],
  ];
  it.each(refused)('refuses %j at %i:%i', (source, line, column, cause) => {
    const found = problem(source);
    expect(found).toMatchObject({ line, column });
    expect(found?.cause).toMatch(cause);
  });
});
