/**
 * Best-effort removal of secret values from text the core sends out: answers,
 * tool results, error bodies and log lines. Every value the core holds is
 * looked for as it is and in the encodings it most often travels in (JSON
 * string escaping, percent-encoding, base64 of the value and of a
 * `user:password` pair's whole), and replaced by `[secret:<name>]`.
 *
 * What it cannot catch is in docs/security.md: a value split across chunks of
 * a stream, transformed (reversed, hashed, re-encoded twice, spaced out), or
 * shorter than MIN_SCRUBBED_LENGTH (which would scrub ordinary words).
 */
import type { ScrubbedValue } from './secret-store.js';

/** Values shorter than this are not looked for: a three-letter value would eat ordinary text. */
export const MIN_SCRUBBED_LENGTH = 6;

interface Needle {
  readonly text: string;
  readonly replacement: string;
}

export class SecretScrubber {
  private readonly sources = new Map<string, () => readonly ScrubbedValue[]>();
  private needles: Needle[] = [];

  /** Adds (or replaces) a source of values; call `update()` when a source's values change. */
  addSource(id: string, values: () => readonly ScrubbedValue[]): void {
    this.sources.set(id, values);
    this.update();
  }

  /** Reads every source again. */
  update(): void {
    const needles = new Map<string, Needle>();
    for (const source of this.sources.values()) {
      for (const { name, value } of source()) {
        if (value.length < MIN_SCRUBBED_LENGTH) continue;
        const replacement = `[secret:${name}]`;
        for (const form of encodings(value)) if (!needles.has(form)) needles.set(form, { text: form, replacement });
      }
    }
    // Longest first: a value that contains another is replaced whole.
    this.needles = [...needles.values()].sort((a, b) => b.text.length - a.text.length);
  }

  /** Whether there is anything to look for (most cores hold no secrets). */
  get active(): boolean {
    return this.needles.length > 0;
  }

  /** The text with every known value replaced. */
  scrub(text: string): string {
    let out = text;
    for (const needle of this.needles) if (out.includes(needle.text)) out = out.split(needle.text).join(needle.replacement);
    return out;
  }

  /**
   * Bytes with every known value replaced, byte for byte: a body that is not
   * UTF-8 (an image) is left as it was around the replaced values.
   */
  scrubBytes(bytes: Buffer): Buffer {
    if (!this.active || !this.needles.some((needle) => bytes.includes(needle.text))) return bytes;
    // latin1 maps each byte to one character and back, so the replacement works on the bytes themselves.
    let text = bytes.toString('latin1');
    for (const needle of this.needles) {
      const raw = Buffer.from(needle.text).toString('latin1');
      if (text.includes(raw)) text = text.split(raw).join(needle.replacement);
    }
    return Buffer.from(text, 'latin1');
  }

  /** A JSON value with every string in it scrubbed (keys too); the value itself when nothing matched. */
  scrubValue<T>(value: T): T {
    if (!this.active) return value;
    return this.walk(value) as T;
  }

  private walk(value: unknown): unknown {
    if (typeof value === 'string') return this.scrub(value);
    if (Array.isArray(value)) {
      const items = value.map((item) => this.walk(item));
      return items.every((item, i) => item === value[i]) ? value : items;
    }
    if (typeof value === 'object' && value !== null && !(value instanceof Uint8Array)) {
      let changed = false;
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) {
        const cleanKey = this.scrub(key);
        const cleanItem = this.walk(item);
        if (cleanKey !== key || cleanItem !== item) changed = true;
        out[cleanKey] = cleanItem;
      }
      return changed ? out : value;
    }
    return value;
  }
}

function encodings(value: string): string[] {
  const forms = new Set([value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value), Buffer.from(value).toString('base64').replace(/=+$/, '')]);
  return [...forms].filter((form) => form.length >= MIN_SCRUBBED_LENGTH);
}
