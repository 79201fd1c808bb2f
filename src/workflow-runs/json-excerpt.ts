/**
 * A value as a bounded piece of indented JSON, for a person to read before a
 * decision (the approvals inbox shows a paused run's input and blackboard):
 * never more than `maxChars`, and says when it was cut.
 */

/** Characters of an excerpt by default: 4 KiB of JSON text. */
export const DEFAULT_EXCERPT_CHARS = 4096;

export interface JsonExcerpt {
  /** Indented JSON, cut at `maxChars`. */
  readonly text: string;
  /** Characters of the whole indented JSON. */
  readonly chars: number;
  readonly truncated: boolean;
}

export function jsonExcerpt(value: unknown, maxChars = DEFAULT_EXCERPT_CHARS): JsonExcerpt {
  const text = JSON.stringify(value ?? null, null, 2) ?? 'null';
  const truncated = text.length > maxChars;
  return { text: truncated ? `${text.slice(0, maxChars - 1)}…` : text, chars: text.length, truncated };
}
