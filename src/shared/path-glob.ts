/**
 * Matching of app-relative path globs (`data/**`, `prompts/*.njk`,
 * `output/{a,b}/[0-9]?.json`) in time linear in the path: an app's glob is
 * compiled once into segments of tokens, and a path (a sandbox's, so an
 * outside party's) is matched by simulating every position of the glob at
 * once (Thompson's construction, over bit masks), never by backtracking. A backtracking
 * expression (picomatch's) costs time polynomial in the path with the number
 * of stars as the exponent: `data/*a*a*a*a*a*b` against a long run of `a`s
 * stalls the core's event loop for every app.
 *
 * The syntax is what picomatch reads in these globs, with `dot: true`:
 * `*` (any run within a segment), `**` as a whole segment (any number of
 * segments, none included: `a/**` matches `a` too), `?` (one character),
 * classes (`[abc]`, `[a-z]`, `[^x]`), braces (`{a,b}`, nested,
 * expanded when compiled), and `\` before a character that is then itself.
 * Wildcards match a leading dot, never `/`, and never a `.` or `..` segment.
 * Syntax picomatch reads but a path glob here has no use for (extglobs such
 * as `+(a|b)`, regex groups, a leading `!`, POSIX classes, brace ranges), or
 * reads differently from a shell (`[!x]`), is refused rather than read as
 * plain text, which would let a forbidden glob forbid nothing. Where
 * picomatch's expressions read a glob in a way of their own (`**.js` across
 * segments, a lone star in braces taking an empty segment, a trailing `/`
 * after a star), this reads it as a glob: path-glob.test.ts lists each case.
 */

/** The longest glob that compiles; the AppDefinition schema bounds its path globs to the same. */
export const MAX_PATH_GLOB_LENGTH = 512;
/** The most globs one brace-expanded glob may stand for (`{a,b}/{c,d}` stands for 4). */
export const MAX_BRACE_ALTERNATIVES = 64;
/** The most characters all alternatives of one glob may hold together, so matching cost stays path × this at most. */
export const MAX_EXPANDED_GLOB_LENGTH = 4096;

export interface PathGlobOptions {
  /** Letters match whatever their case (picomatch's `nocase`). @defaultValue false */
  readonly ignoreCase?: boolean;
}

/** A compiled glob (or list of globs): whether a path matches it (any of them). */
export type PathMatcher = (path: string) => boolean;

/** A glob that does not compile: too long, too many alternatives, or syntax a path glob does not take. */
export class PathGlobSyntaxError extends Error {
  override readonly name = 'PathGlobSyntaxError';
  constructor(
    readonly glob: string,
    readonly reason: string,
  ) {
    super(`glob "${glob.length > 100 ? `${glob.slice(0, 100)}…` : glob}" ${reason}`);
  }
}

/**
 * Compiles `globs` once; the matcher answers whether a path matches any of
 * them, in time linear in the path's length times the globs' size.
 * @throws PathGlobSyntaxError when a glob does not compile (see {@link pathGlobProblem})
 */
export function compilePathGlob(globs: string | readonly string[], options: PathGlobOptions = {}): PathMatcher {
  const ignoreCase = options.ignoreCase === true;
  const compiled = (typeof globs === 'string' ? [globs] : globs).flatMap((glob) => compileOne(glob, ignoreCase));
  return (path: string): boolean => {
    if (path === '') return false;
    const segments = path.split('/');
    const subject = ignoreCase ? segments.map((segment) => segment.toLowerCase()) : segments;
    return compiled.some((glob) => matchSegments(glob, subject, ignoreCase));
  };
}

/** Why `glob` does not compile, or undefined when it does: what a definition's validation reports. */
export function pathGlobProblem(glob: string): string | undefined {
  try {
    compileOne(glob, false);
    return undefined;
  } catch (error) {
    if (error instanceof PathGlobSyntaxError) return error.reason;
    throw error;
  }
}

/**
 * Whether `pattern` holds glob syntax (a star, `?`, a class, a brace list),
 * so that it names more than the one path it spells: picomatch's
 * `scan(pattern).isGlob`, except that an unclosed brace (`{a,b`) is text here.
 */
export function isGlob(pattern: string): boolean {
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') i++;
    else if (c === '*' || c === '?') return true;
    else if (c === '[' && classEnd(pattern, i) !== -1) return true;
    else if (c === '{' && braceParts(pattern, i) !== undefined) return true;
  }
  return false;
}

// ---- compiling ------------------------------------------------------------

/** One position of a segment: a character, any character, a class, or a run of any characters. */
type Token = { readonly kind: 'char'; readonly char: string } | { readonly kind: 'any' } | ClassToken | { readonly kind: 'star' };

type ClassToken = { readonly kind: 'class'; readonly negated: boolean; readonly ranges: readonly (readonly [string, string])[] };

interface SegmentMachine {
  /** 32-bit words of a state: one bit per position, the tokens' count plus one. */
  readonly words: number;
  /** The position reached when every token is matched. */
  readonly accept: number;
  /** The positions of stars. */
  readonly stars: Uint32Array;
  /** The positions whose token takes any character (`?`). */
  readonly anyChar: Uint32Array;
  /** Per character of the glob: the positions that take it (`?` ones included). */
  readonly byChar: ReadonlyMap<string, Uint32Array>;
  readonly classes: readonly { readonly position: number; readonly token: ClassToken }[];
}

/**
 * A segment of a glob: `**` (any number of path segments; at least one when
 * `atLeastOne`) or tokens matched against one path segment.
 */
type Segment =
  | { readonly globstar: true; readonly atLeastOne: boolean }
  | { readonly globstar: false; readonly tokens: readonly Token[]; readonly machine: SegmentMachine; readonly literal: boolean };

type CompiledGlob = readonly Segment[];

function compileOne(glob: string, ignoreCase: boolean): CompiledGlob[] {
  const refuse = (reason: string): never => {
    throw new PathGlobSyntaxError(glob, reason);
  };
  if (glob.length === 0) refuse('is empty');
  if (glob.length > MAX_PATH_GLOB_LENGTH) refuse(`is longer than ${MAX_PATH_GLOB_LENGTH} characters`);
  if (glob.includes(BOUNDARY)) refuse('holds a NUL character');
  if (glob.startsWith('!')) refuse('starts with "!": negated globs are not supported (use forbidden)');
  const alternatives = expandBraces(glob, refuse);
  if (alternatives.reduce((sum, alternative) => sum + alternative.replaceAll(BOUNDARY, '').length, 0) > MAX_EXPANDED_GLOB_LENGTH) {
    refuse(`stands for more than ${MAX_EXPANDED_GLOB_LENGTH} characters of globs once its braces are expanded`);
  }
  return alternatives.map((alternative) => parse(alternative, ignoreCase, refuse));
}

/**
 * Where a brace list stood, in an expanded glob: the parser skips it, but two
 * stars it parts (`*{a,*}`) are two stars of one segment, never a `**` segment,
 * and a `**` it holds is read as picomatch reads it (see parse).
 */
const BOUNDARY = '\0';

/** The globs `glob` stands for once every brace list is expanded, at most MAX_BRACE_ALTERNATIVES of them. */
function expandBraces(glob: string, refuse: (reason: string) => never): string[] {
  const done: string[] = [];
  const pending = [glob];
  while (pending.length > 0) {
    const next = pending.pop()!;
    const found = firstBraceList(next);
    if (found === undefined) {
      done.push(next);
    } else {
      const { start, end, parts } = found;
      if (parts.length === 1) refuse('holds a brace range such as {1..3}: list the alternatives');
      for (const part of parts) {
        pending.push(next.slice(0, start) + BOUNDARY + part + BOUNDARY + next.slice(end + 1));
      }
    }
    if (done.length + pending.length > MAX_BRACE_ALTERNATIVES) refuse(`stands for more than ${MAX_BRACE_ALTERNATIVES} globs once its braces are expanded`);
  }
  // Popping reversed the order; keep the glob's own.
  return done.reverse();
}

/** The first brace list of `glob` (outside classes, not escaped) that has a comma at its own level, or a range. */
function firstBraceList(glob: string): { start: number; end: number; parts: string[] } | undefined {
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '\\') i++;
    else if (c === '[') {
      const end = classEnd(glob, i);
      if (end !== -1) i = end;
    } else if (c === '{') {
      const parts = braceParts(glob, i);
      if (parts !== undefined) return { start: i, end: parts.end, parts: parts.parts };
    }
  }
  return undefined;
}

/**
 * The alternatives of the brace list opening at `open`, and where it closes;
 * undefined when it does not close or has neither a comma nor `..` at its own
 * level (`{b}` is the text `{b}`, as picomatch reads it).
 */
function braceParts(glob: string, open: number): { end: number; parts: string[] } | undefined {
  let depth = 0;
  let from = open + 1;
  const parts: string[] = [];
  for (let i = open + 1; i < glob.length; i++) {
    const c = glob[i];
    if (c === '\\') i++;
    else if (c === '[') {
      const end = classEnd(glob, i);
      if (end !== -1) i = end;
    } else if (c === '{') depth++;
    else if (c === '}' && depth > 0) depth--;
    else if (c === ',' && depth === 0) {
      parts.push(glob.slice(from, i));
      from = i + 1;
    } else if (c === '}') {
      const last = glob.slice(from, i);
      if (parts.length === 0) return last.includes('..') ? { end: i, parts: [last] } : undefined;
      parts.push(last);
      return { end: i, parts };
    }
  }
  return undefined;
}

/** Where the class opening at `open` closes (a `]` right after `[`, `[!` or `[^` is a member), or -1 when it does not. */
function classEnd(glob: string, open: number): number {
  let i = open + 1;
  if (glob[i] === '!' || glob[i] === '^') i++;
  if (glob[i] === ']') i++;
  for (; i < glob.length; i++) {
    if (glob[i] === '\\') i++;
    else if (glob[i] === ']') return i;
  }
  return -1;
}

function parse(glob: string, ignoreCase: boolean, refuse: (reason: string) => never): CompiledGlob {
  // picomatch reads `./a` as `a`.
  const text = glob.startsWith('./') ? glob.slice(2) : glob;
  const segments: Segment[] = [];
  let tokens: Token[] = [];
  let raw = '';
  const fold = (c: string): string => (ignoreCase ? c.toLowerCase() : c);
  const endSegment = (): void => {
    if (raw === '**') segments.push({ globstar: true, atLeastOne: false });
    // picomatch reads a `**` segment that a brace list holds (`{data/**,b}`) as one or more segments, never none.
    else if (raw.replaceAll(BOUNDARY, '') === '**' && !/\*\0+\*/.test(raw)) segments.push({ globstar: true, atLeastOne: true });
    else segments.push({ globstar: false, tokens, machine: segmentMachine(tokens), literal: tokens.every((token) => token.kind === 'char') });
    tokens = [];
    raw = '';
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === BOUNDARY) {
      raw += c;
    } else if (c === '/') {
      endSegment();
    } else if (c === '\\') {
      if (i + 1 === text.length) refuse('ends with a lone "\\"');
      tokens.push({ kind: 'char', char: fold(text[++i]!) });
      raw += `\\${text[i]}`;
    } else if (c === '*') {
      if (text[i + 1] === '(') refuse('holds an extglob such as *(a|b), which path globs do not take');
      // A run of stars inside a segment is one star; only a whole segment `**` crosses segments.
      if (tokens.at(-1)?.kind !== 'star') tokens.push({ kind: 'star' });
      raw += c;
    } else if (c === '?') {
      if (text[i + 1] === '(') refuse('holds an extglob such as ?(a|b), which path globs do not take');
      tokens.push({ kind: 'any' });
      raw += c;
    } else if (c === '[' && classEnd(text, i) !== -1) {
      const end = classEnd(text, i);
      tokens.push(parseClass(text.slice(i + 1, end), refuse));
      raw += text.slice(i, end + 1);
      i = end;
    } else if (c === '(' || c === ')' || ((c === '+' || c === '@' || c === '!') && text[i + 1] === '(')) {
      refuse('holds "(" or ")": groups and extglobs are not taken (write \\( for the character)');
    } else {
      tokens.push({ kind: 'char', char: fold(c) });
      raw += c;
    }
  }
  endSegment();
  // picomatch: a last `/**` after a segment ending in a star names descendants only (`data/*/**` does not match `data/x`),
  // where after anything else it names the parent too (`data/**` matches `data`).
  const last = segments.at(-1);
  const before = segments.at(-2);
  if (last?.globstar === true && before?.globstar === false && before.tokens.at(-1)?.kind === 'star') segments[segments.length - 1] = { globstar: true, atLeastOne: true };
  return segments;
}

function parseClass(body: string, refuse: (reason: string) => never): Token {
  // picomatch 4 reads `[!a]` as the class of `!` and `a`, a shell as "not a": refused, so no glob means one thing here and another there.
  if (body.startsWith('!')) refuse('holds a class starting "[!", read as a negation by a shell but not by picomatch: write [^...] to negate, or [\\!...]');
  const negated = body.startsWith('^');
  const members: string[] = [];
  for (let i = negated ? 1 : 0; i < body.length; i++) {
    if (body[i] === '\\') i++;
    else if (body[i] === '[' && body[i + 1] === ':') refuse('holds a POSIX class such as [[:alpha:]]: write the characters out');
    if (body[i] === '/') refuse('holds "/" in a character class: a class matches one character of a segment');
    members.push(body[i]!);
  }
  const ranges: [string, string][] = [];
  for (let i = 0; i < members.length; i++) {
    if (members[i + 1] === '-' && i + 2 < members.length) {
      if (members[i]! > members[i + 2]!) refuse(`holds the range ${members[i]}-${members[i + 2]}, which is out of order`);
      ranges.push([members[i]!, members[i + 2]!]);
      i += 2;
    } else ranges.push([members[i]!, members[i]!]);
  }
  return { kind: 'class', negated, ranges };
}

// ---- matching -------------------------------------------------------------

/**
 * Runs the glob's segments over the path's as one automaton: the set of glob
 * segments reached so far advances by one path segment at a time; `**` stays
 * where it is and may also be passed without taking a segment.
 */
function matchSegments(glob: CompiledGlob, path: readonly string[], ignoreCase: boolean): boolean {
  let active = new Uint8Array(glob.length + 1);
  let next = new Uint8Array(glob.length + 1);
  active[0] = 1;
  closeOverGlobstars(glob, active);
  for (const segment of path) {
    next.fill(0);
    let any = false;
    const special = segment === '.' || segment === '..';
    for (let g = 0; g < glob.length; g++) {
      if (active[g] === 0) continue;
      const part = glob[g]!;
      if (part.globstar) {
        // `**` never takes a `.` or `..` segment, as picomatch's `dot: true` reads it.
        if (special) continue;
        next[g] = 1;
        if (part.atLeastOne) next[g + 1] = 1;
      } else {
        // Nor does any wildcard; and no glob segment takes an empty path segment.
        if (segment === '' || (special && !part.literal) || !matchSegment(part.machine, segment, ignoreCase)) continue;
        next[g + 1] = 1;
      }
      any = true;
    }
    if (!any) return false;
    closeOverGlobstars(glob, next);
    [active, next] = [next, active];
  }
  return active[glob.length] === 1;
}

/** Adds to `states` the segments reached by passing `**` segments without taking a path segment. */
function closeOverGlobstars(glob: CompiledGlob, states: Uint8Array): void {
  for (let g = 0; g < glob.length; g++) {
    const part = glob[g]!;
    if (states[g] === 1 && part.globstar && !part.atLeastOne) states[g + 1] = 1;
  }
}

/**
 * Whether one path segment matches one glob segment: bit k of the state is
 * "the first k tokens are matched", so one character advances every position
 * at once with a few word operations (the shift-and form of Thompson's
 * simulation), and a segment costs its length times the glob segment's words.
 */
function matchSegment(machine: SegmentMachine, text: string, ignoreCase: boolean): boolean {
  const { words, stars, classes } = machine;
  let active = new Uint32Array(words);
  let next = new Uint32Array(words);
  const withClasses = classes.length > 0 ? new Uint32Array(words) : undefined;
  active[0] = 1;
  closeOverStars(active, stars);
  for (let t = 0; t < text.length; t++) {
    const c = text[t]!;
    let takes = machine.byChar.get(c) ?? machine.anyChar;
    if (withClasses !== undefined) {
      withClasses.set(takes);
      for (const { position, token } of classes) if (classMatches(token, c, ignoreCase)) withClasses[position >>> 5]! |= 1 << (position & 31);
      takes = withClasses;
    }
    let carry = 0;
    let alive = 0;
    for (let w = 0; w < words; w++) {
      const before = active[w]!;
      const took = before & takes[w]!;
      // A matched token moves on one position; a star also stays where it is.
      next[w] = (took << 1) | carry | (before & stars[w]!);
      carry = took >>> 31;
      alive |= next[w]!;
    }
    if (alive === 0) return false;
    closeOverStars(next, stars);
    [active, next] = [next, active];
  }
  return (active[machine.accept >>> 5]! & (1 << (machine.accept & 31))) !== 0;
}

/** Adds the positions reached by passing a star without taking a character (stars never stand next to each other). */
function closeOverStars(states: Uint32Array, stars: Uint32Array): void {
  let carry = 0;
  for (let w = 0; w < states.length; w++) {
    const passed = states[w]! & stars[w]!;
    states[w] = states[w]! | (passed << 1) | carry;
    carry = passed >>> 31;
  }
}

/** A segment's tokens as bit masks over positions (see {@link matchSegment}). */
function segmentMachine(tokens: readonly Token[]): SegmentMachine {
  const words = (tokens.length + 32) >>> 5;
  const stars = new Uint32Array(words);
  const anyChar = new Uint32Array(words);
  const positions = new Map<string, number[]>();
  const classes: { position: number; token: ClassToken }[] = [];
  const set = (mask: Uint32Array, k: number): void => void (mask[k >>> 5] = mask[k >>> 5]! | (1 << (k & 31)));
  tokens.forEach((token, k) => {
    if (token.kind === 'star') set(stars, k);
    else if (token.kind === 'any') set(anyChar, k);
    else if (token.kind === 'class') classes.push({ position: k, token });
    else positions.set(token.char, [...(positions.get(token.char) ?? []), k]);
  });
  const byChar = new Map<string, Uint32Array>();
  for (const [char, at] of positions) {
    const mask = anyChar.slice();
    for (const k of at) set(mask, k);
    byChar.set(char, mask);
  }
  return { words, accept: tokens.length, stars, anyChar, byChar, classes };
}

function classMatches(token: ClassToken, c: string, ignoreCase: boolean): boolean {
  // Folded text is lower case; a range such as A-Z must still take it, as a case-insensitive regex class does.
  const inRanges = (x: string): boolean => token.ranges.some(([low, high]) => x >= low && x <= high);
  const member = inRanges(c) || (ignoreCase && inRanges(c.toUpperCase()));
  return member !== token.negated;
}
