/**
 * "Did you mean": the closest of the known words to a misspelt one, so that
 * `uhlp dev --prot 1` answers `did you mean --port?` instead of a parser's
 * raw text.
 */

/** Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`: optimal string alignment. */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      // A swap of two neighbours (prot -> port) is one slip of the fingers, not two.
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The known word `word` most likely stands for: the nearest within a third of
 * its length (at least 1, at most 3 edits), or the only one it begins; none
 * when nothing is close, so that no suggestion is a guess.
 */
export function closest(word: string, known: readonly string[]): string | undefined {
  const lower = word.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const distance = editDistance(lower, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const allowed = Math.min(3, Math.max(1, Math.floor(lower.length / 3)));
  if (best !== undefined && bestDistance <= allowed) return best;
  const prefixed = lower.length >= 2 ? known.filter((candidate) => candidate.toLowerCase().startsWith(lower)) : [];
  return prefixed.length === 1 ? prefixed[0] : undefined;
}
