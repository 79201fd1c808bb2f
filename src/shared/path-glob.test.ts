import picomatch from 'picomatch';
import { describe, expect, it } from 'vitest';
import { compilePathGlob, isGlob, MAX_BRACE_ALTERNATIVES, MAX_PATH_GLOB_LENGTH, pathGlobProblem, PathGlobSyntaxError } from './path-glob.js';

// Each row was checked against picomatch 4 with { dot: true } (and nocase for the last column).
// [glob, path, matches, matches ignoring case]
const TABLE: readonly (readonly [string, string, boolean, boolean])[] = [
  ['data/**', 'data', true, true],
  ['data/**', 'data/a/b.json', true, true],
  ['data/**', 'data/.cache/x', true, true],
  ['data/**', 'Data/x', false, true],
  ['data/**', 'other/x', false, false],
  ['a/**/b', 'a/b', true, true],
  ['a/*/**', 'a/b', false, false],
  ['a/*/**', 'a/b/c', true, true],
  ['a/?/**', 'a/b', true, true],
  ['a/*/**/c', 'a/b/c', true, true],
  ['a/**/b', 'a/x/y/b', true, true],
  ['a/**/b', 'a/x/y/c', false, false],
  ['**/b', 'b', true, true],
  ['**/b', 'x/y/b', true, true],
  ['**', 'a/b', true, true],
  ['**', '.a/.b', true, true],
  ['**', '', false, false],
  ['a/*', 'a/b', true, true],
  ['a/*', 'a/.x', true, true],
  ['a/*', 'a/b/c', false, false],
  ['*', '.', false, false],
  ['*', '..', false, false],
  ['a**b', 'axyb', true, true],
  ['a**b', 'ax/yb', false, false],
  ['a/**b', 'a/xb', true, true],
  ['a/**b', 'a/x/b', false, false],
  ['prompts/*.njk', 'prompts/a.njk', true, true],
  ['prompts/*.njk', 'prompts/sub/a.njk', false, false],
  ['a?c', 'abc', true, true],
  ['a?c', 'a/c', false, false],
  ['a[^b]c', 'a/c', false, false],
  ['a[^b]c', 'axc', true, true],
  ['a[^b]c', 'abc', false, false],
  ['a/[a-c]', 'a/b', true, true],
  ['a/[a-c]', 'a/B', false, true],
  ['a/[]]', 'a/]', true, true],
  ['a/[b', 'a/[b', true, true],
  ['a/{b,c}', 'a/c', true, true],
  ['a/{b,c}', 'a/d', false, false],
  ['a/{b}', 'a/{b}', true, true],
  ['a/{b}', 'a/b', false, false],
  ['a/{,b}x', 'a/x', true, true],
  ['a/{b,{c,d}}', 'a/d', true, true],
  ['a/{b,c}/{d,e}', 'a/c/e', true, true],
  ['{data/**,prompts/*}', 'data/x/y', true, true],
  ['{data/**,prompts/*}', 'data', false, false],
  ['a/{**,b}/c', 'a/x/y/c', true, true],
  ['a/{**,b}/c', 'a/c', false, false],
  ['{a,b}/**', 'a', true, true],
  ['a/\\*', 'a/*', true, true],
  ['a/\\*', 'a/x', false, false],
  ['./a', 'a', true, true],
  ['a//b', 'a/b', false, false],
  ['A/b', 'a/b', false, true],
  ['scripts/*.MJS', 'scripts/x.mjs', false, true],
  ['a.b', 'axb', false, false],
  ['a/b+', 'a/b+', true, true],
  ['a/$b^', 'a/$b^', true, true],
];

describe('compilePathGlob', () => {
  it.each(TABLE)('%s against %s -> %s (ignoring case: %s)', (glob, path, expected, expectedIgnoringCase) => {
    expect(compilePathGlob(glob)(path)).toBe(expected);
    expect(compilePathGlob(glob, { ignoreCase: true })(path)).toBe(expectedIgnoringCase);
  });

  // Where picomatch's regular expression reads a glob in a way no glob reader intends; ours, then picomatch's.
  it.each([
    ['x/**/{a,*}', 'x', false], // picomatch: true (a star alone in braces takes an empty segment)
    ['x/{a,*}', 'x/', false], // picomatch: true
    ['**.js', 'a/b.js', false], // picomatch: true (a leading `**` before text crosses segments)
    ['**{a,b}', 'c/a', false], // picomatch: true
    ['.*', '..', false], // picomatch: true; wildcards never take a `..` segment here
    ['a/*', 'a/b/', false], // picomatch: true (it allows a trailing `/` after a star)
  ])('%s against %s -> %s, unlike picomatch', (glob, path, expected) => {
    expect(compilePathGlob(glob)(path)).toBe(expected);
    expect(picomatch(glob, { dot: true })(path)).toBe(!expected);
  });

  it('matches when any glob of a list matches', () => {
    const matches = compilePathGlob(['data/**', 'prompts/*.njk']);
    expect(matches('prompts/a.njk')).toBe(true);
    expect(matches('data/x')).toBe(true);
    expect(matches('other')).toBe(false);
    expect(compilePathGlob([])('data/x')).toBe(false);
  });

  it('agrees with picomatch over a generated corpus of globs and normalized paths', () => {
    const random = seeded(40);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const globParts = ['a', 'b', 'A', '.', '*', '*', '**', '?', '/', '/', '[ab]', '[^a]', '[a-c]', '[A-B]', '{a,b}', '{a,*b}', '{b,*}.', '{,b}', '\\*', '.x', '-', '**/', '/**', '/**/', '{a/b,*/c}', '{**,b}', '{a/**,b}', '{b,a/**}'];
    const pathParts = ['a', 'b', 'c', 'A', 'B', '.', '.x', '-', '*', '/', '/', 'ab', 'aa'];
    const globs = Array.from({ length: 1000 }, () => Array.from({ length: 1 + Math.floor(random() * 7) }, () => pick(globParts)).join(''));
    const paths = Array.from({ length: 120 }, () => Array.from({ length: 1 + Math.floor(random() * 8) }, () => pick(pathParts)).join('')).filter(
      // The paths the callers give: app-relative and normalized, no empty, "." or ".." segments (where picomatch's reading is its own).
      (path) => path.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..'),
    );
    const disagreements: string[] = [];
    let compared = 0;
    for (const glob of globs) {
      // A `**` that is not a whole segment is `*` here; picomatch reads some such (`**.js`, `**{a,b}`) across segments.
      // An empty glob segment (`a//b`, `a/{,b}`) names only paths with one, which picomatch reads in ways of its own next to `**`.
      if (pathGlobProblem(glob) !== undefined || /[^/]\*\*|\*\*[^/]/.test(glob) || /\/\/|^\/|\/$|(^|\/)\{,|,\}(\/|$)/.test(glob)) continue;
      for (const ignoreCase of [false, true]) {
        const ours = compilePathGlob(glob, { ignoreCase });
        const theirs = picomatch(glob, { dot: true, nocase: ignoreCase });
        for (const path of paths) {
          compared++;
          if (ours(path) !== theirs(path)) disagreements.push(`${glob} ${path} ignoreCase=${ignoreCase}: picomatch says ${theirs(path)}`);
        }
      }
    }
    expect(disagreements.slice(0, 20)).toEqual([]);
    expect(compared).toBeGreaterThan(30_000);
  });

  it('matches a glob of many stars against a 1024-character path in a few milliseconds', () => {
    const glob = 'data/*a*a*a*a*a*a*a*a*a*a*b';
    const path = `data/${'a'.repeat(1019)}`;
    const matches = compilePathGlob(glob, { ignoreCase: true });
    const started = performance.now();
    expect(matches(path)).toBe(false);
    expect(compilePathGlob(`**/${'*a'.repeat(40)}*b/**`)(`${'a/'.repeat(200)}${'a'.repeat(623)}`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(50);
  });
});

describe('pathGlobProblem', () => {
  it.each([
    ['data/**', undefined],
    ['a/{b,c}/[^x]?.json', undefined],
    ['', /is empty/],
    ['x'.repeat(MAX_PATH_GLOB_LENGTH + 1), /longer than 512/],
    ['{a,b}/{a,b}/{a,b}/{a,b}/{a,b}/{a,b}/{a,b}', new RegExp(`more than ${MAX_BRACE_ALTERNATIVES} globs`)],
    [`${'{aaaaaaaa,bbbbbbbb}'.repeat(5)}${'x'.repeat(400)}`, /more than 4096 characters/],
    ['!data/**', /negated globs/],
    ['data/+(a|b)', /groups and extglobs/],
    ['data/(a|b)', /groups and extglobs/],
    ['data/*(a)', /extglob/],
    ['data/[[:alpha:]]', /POSIX class/],
  ['data/[!.]*', /write \[\^\.\.\.\] to negate/],
    ['data/{1..3}', /brace range/],
    ['data/[z-a]', /out of order/],
    ['data/[a/b]', /"\/" in a character class/],
    ['data\\', /lone/],
  ])('%s -> %s', (glob, problem) => {
    const found = pathGlobProblem(glob);
    if (problem === undefined) expect(found).toBeUndefined();
    else expect(found).toMatch(problem);
  });

  it('is what compilePathGlob throws, naming the glob', () => {
    expect(() => compilePathGlob(['data/**', 'data/{1..3}'])).toThrow(PathGlobSyntaxError);
    expect(() => compilePathGlob('data/{1..3}')).toThrow('glob "data/{1..3}" holds a brace range');
  });
});

describe('isGlob', () => {
  // Each row agrees with picomatch.scan(pattern).isGlob.
  it.each([
    ['output/report.json', false],
    ['output/*.json', true],
    ['tmp/**', true],
    ['output/a?.json', true],
    ['output/[ab].json', true],
    ['output/{a,b}.json', true],
    ['output/{a}.json', false],
    ['output/[a.json', false],
    ['output/\\*.json', false],
  ] as const)('%s -> %s', (pattern, expected) => {
    expect(isGlob(pattern)).toBe(expected);
    expect(picomatch.scan(pattern).isGlob).toBe(expected);
  });
});

/** A small deterministic generator (mulberry32), so the corpus is the same on every run. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
