/**
 * A deterministic text embedding that needs no model: feature hashing of the
 * text's words (lower case, common English stop words left out) and of their
 * character trigrams into 256 dimensions, L2-normalized. It is what
 * `core.llm.embed` answers with when no embeddings endpoint is configured, and
 * it says so: its model name is `uhlp-local-hash-256`. Texts that share words
 * (or most of a word: refund / refunds) come out near each other; it knows no
 * synonyms. Good enough to route lazy skills offline and in tests; a real
 * embedding model does better.
 */

export const LOCAL_EMBEDDING_MODEL = 'uhlp-local-hash-256';
const DIMENSIONS = 256;

const STOP_WORDS = new Set(
  'a an and are as at be but by do does for from has have i if in into is it its me my of on or our so that the their them they this to was we what when where which who will with you your want need please can could would should'.split(' '),
);

/** The embedding of `text`: 256 numbers of unit length (all zero for a text with no words). */
export function localEmbedding(text: string): number[] {
  const vector = new Array<number>(DIMENSIONS).fill(0);
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  for (const word of words) {
    if (STOP_WORDS.has(word)) continue;
    add(vector, `w:${word}`, 1);
    const padded = `^${word}$`;
    for (let i = 0; i + 3 <= padded.length; i++) add(vector, `t:${padded.slice(i, i + 3)}`, 0.4);
  }
  const norm = Math.sqrt(vector.reduce((sum, x) => sum + x * x, 0));
  return norm === 0 ? vector : vector.map((x) => x / norm);
}

/** Cosine similarity of two vectors of the same length (0 when either is all zero). */
export function cosineSimilarity(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

function add(vector: number[], feature: string, weight: number): void {
  const hash = fnv1a(feature);
  // One bit of the hash is the sign, so that collisions cancel out instead of piling up.
  vector[hash % DIMENSIONS]! += hash & 0x80000000 ? -weight : weight;
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
