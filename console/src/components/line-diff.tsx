/**
 * A line diff of two texts (longest common subsequence), shown as a unified
 * listing: removed lines, added lines, and the lines both have. For candidate
 * modules of a few hundred lines; longer texts are compared by their first
 * MAX_LINES lines.
 */
const MAX_LINES = 2000;

export type DiffLine = { readonly kind: 'same' | 'add' | 'del'; readonly text: string };

export function diffLines(before: string, after: string): DiffLine[] {
  const a = before.split('\n').slice(0, MAX_LINES);
  const b = after.split('\n').slice(0, MAX_LINES);
  const lcs: Uint16Array[] = Array.from({ length: a.length + 1 }, () => new Uint16Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) for (let j = b.length - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push({ kind: 'same', text: a[i]! });
      i++;
      j++;
    } else if (lcs[i + 1]![j]! >= lcs[i]![j + 1]!) out.push({ kind: 'del', text: a[i++]! });
    else out.push({ kind: 'add', text: b[j++]! });
  }
  while (i < a.length) out.push({ kind: 'del', text: a[i++]! });
  while (j < b.length) out.push({ kind: 'add', text: b[j++]! });
  return out;
}

export function LineDiff({ before, after, label }: { before: string; after: string; label: string }) {
  const mark = { same: ' ', add: '+', del: '-' } as const;
  return (
    <pre class="diff" aria-label={label} tabIndex={0}>
      {diffLines(before, after).map((line) => (
        <span class={`diff-${line.kind}`}>
          {mark[line.kind]} {line.text}
          {'\n'}
        </span>
      ))}
    </pre>
  );
}
