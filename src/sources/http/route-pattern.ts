/**
 * Path patterns of app routes: literal segments, `:name` parameters (one whole
 * segment each) and an optional trailing `*` that takes the rest of the path.
 * A `{name}` segment (other routers' parameters) is refused with the `:name` to write.
 * Matching is on raw (still percent-encoded) segments so that an encoded `/`
 * inside a parameter never splits it; parameters are decoded after the match.
 */

export type Segment =
  | { readonly kind: 'literal'; readonly value: string }
  | { readonly kind: 'param'; readonly name: string }
  | { readonly kind: 'wildcard' };

export interface RoutePattern {
  readonly source: string;
  readonly segments: readonly Segment[];
  /** Sort key: more specific patterns first (literal > param > wildcard, per position). */
  readonly rank: string;
}

export class RoutePatternError extends Error {
  constructor(
    readonly pattern: string,
    reason: string,
  ) {
    super(`route pattern "${pattern}" ${reason}`);
    this.name = 'RoutePatternError';
  }
}

const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function splitPath(path: string): string[] {
  // "/a/b/" and "/a/b" are the same route; "/" has no segments.
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  return trimmed === '/' || trimmed === '' ? [] : trimmed.slice(1).split('/');
}

export function compileRoutePattern(source: string): RoutePattern {
  if (!source.startsWith('/')) throw new RoutePatternError(source, 'must start with "/"');
  if (/[?#]/.test(source)) throw new RoutePatternError(source, 'must not contain "?" or "#"');
  const raw = splitPath(source);
  const names = new Set<string>();
  const segments: Segment[] = raw.map((part, index) => {
    if (part === '*') {
      if (index !== raw.length - 1) throw new RoutePatternError(source, 'may only have "*" as its last segment');
      return { kind: 'wildcard' };
    }
    if (part.startsWith(':')) {
      const name = part.slice(1);
      if (!PARAM_NAME.test(name)) throw new RoutePatternError(source, `has an invalid parameter name "${name}"`);
      if (names.has(name)) throw new RoutePatternError(source, `repeats the parameter "${name}"`);
      names.add(name);
      return { kind: 'param', name };
    }
    if (part === '') throw new RoutePatternError(source, 'has an empty segment');
    // `{name}` is how other routers write a parameter; here it would be a literal that no client's
    // path matches (a client sends braces percent-encoded), so the route could only ever 404.
    if (/[{}]/.test(part)) {
      const braced = /^\{([^{}]*)\}$/.exec(part)?.[1];
      const hint = braced !== undefined && PARAM_NAME.test(braced) ? `write ":${braced}" for a parameter` : 'parameters are written ":name"';
      throw new RoutePatternError(source, `has "{" or "}" in segment "${part}": ${hint} (a literal brace never matches a request)`);
    }
    return { kind: 'literal', value: part };
  });
  const rank = segments.map((s) => (s.kind === 'literal' ? '0' : s.kind === 'param' ? '1' : '2')).join('') + '3';
  return { source, segments, rank };
}

export type PathParameters = Record<string, string>;

export class PathDecodeError extends Error {
  constructor(readonly segment: string) {
    super(`path segment "${segment}" is not valid percent-encoding`);
    this.name = 'PathDecodeError';
  }
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new PathDecodeError(segment);
  }
}

/**
 * Matches a request path (no query string) against a pattern. Returns the decoded
 * parameters, or undefined when the path does not match. Throws PathDecodeError
 * when a matched parameter is not valid percent-encoding.
 */
export function matchRoutePattern(pattern: RoutePattern, path: string): PathParameters | undefined {
  const parts = splitPath(path);
  const { segments } = pattern;
  const last = segments[segments.length - 1];
  const hasWildcard = last?.kind === 'wildcard';
  const fixed = hasWildcard ? segments.length - 1 : segments.length;
  if (hasWildcard ? parts.length < fixed : parts.length !== fixed) return undefined;

  let params: PathParameters | undefined;
  for (let i = 0; i < fixed; i++) {
    const segment = segments[i]!;
    const part = parts[i]!;
    if (segment.kind === 'literal') {
      if (segment.value !== part) return undefined;
    } else if (part === '') {
      return undefined;
    } else {
      (params ??= {})[(segment as { name: string }).name] = part;
    }
  }
  const decoded: PathParameters = {};
  if (params) for (const [name, raw] of Object.entries(params)) decoded[name] = decodeSegment(raw);
  if (hasWildcard) decoded['*'] = parts.slice(fixed).map(decodeSegment).join('/');
  return decoded;
}

/** Orders patterns most specific first; ties keep declaration order. */
export function compareRoutePatterns(a: RoutePattern, b: RoutePattern): number {
  return a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0;
}
