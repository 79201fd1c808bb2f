/**
 * Matching of wildcard patterns (`orders.*`, `app.fs.read_*`) without a
 * regular expression. A pattern of many stars (`*a*a*a*a*b`, an app's) compiled
 * to a backtracking expression costs time polynomial in the text (a client's)
 * with the number of stars as the exponent; this walk never goes back further
 * than the last star, so it costs at most text × pattern steps.
 */

export interface WildcardOptions {
  /** `?` stands for any one character; otherwise it is itself. @defaultValue false */
  readonly questionMark?: boolean;
  /** Letters match whatever their case. @defaultValue false */
  readonly ignoreCase?: boolean;
}

/** Whether the whole `text` matches `pattern`, where `*` stands for any run of characters (none included). */
export function wildcardMatch(text: string, pattern: string, options: WildcardOptions = {}): boolean {
  const t = options.ignoreCase === true ? text.toLowerCase() : text;
  const p = options.ignoreCase === true ? pattern.toLowerCase() : pattern;
  const one = options.questionMark === true;
  let ti = 0;
  let pi = 0;
  // Where the last star was, and how far into the text it reaches so far.
  let star = -1;
  let reach = 0;
  while (ti < t.length) {
    const c = p[pi];
    if (pi < p.length && c !== '*' && (c === t[ti] || (one && c === '?'))) {
      ti++;
      pi++;
    } else if (c === '*') {
      star = pi++;
      reach = ti;
    } else if (star >= 0) {
      // The last star takes one more character, and the rest of the pattern starts again after it.
      pi = star + 1;
      ti = ++reach;
    } else {
      return false;
    }
  }
  while (p[pi] === '*') pi++;
  return pi === p.length;
}
