/**
 * Best-effort removal of secret values from text the core sends out: answers,
 * tool results, error bodies and log lines. Every value the core holds is
 * looked for as it is and in the encodings it most often travels in (JSON
 * string escaping, percent-encoding, base64 of the value and of a
 * `user:password` pair's whole), and replaced by `[secret:<name>]`.
 *
 * A value rotated away is still looked for during RETIRED_RETENTION_MS: a turn
 * that read it before the rotation may answer with it after.
 *
 * What it cannot catch is in docs/security.md: a value transformed (reversed,
 * hashed, re-encoded twice, spaced out), shorter than MIN_SCRUBBED_LENGTH
 * (which would scrub ordinary words), or rotated away longer ago than the
 * retention. Streams are scrubbed piece by piece (stream-scrubber.ts).
 */
import { MAX_EXECUTION_TIMEOUT_MS } from '../apps/schema/app-definition-schema.js';
import type { ScrubbedValue } from './secret-store.js';

/** Values shorter than this are not looked for: a three-letter value would eat ordinary text. */
export const MIN_SCRUBBED_LENGTH = 6;

/**
 * How long a value rotated away is still looked for: the longest execution an
 * app may declare (a script that read the value as it started answers at the
 * latest then), and a minute for its answer to be written out.
 */
export const RETIRED_RETENTION_MS = MAX_EXECUTION_TIMEOUT_MS + 60_000;

/**
 * Retired values kept at most (the oldest go first): a file rewritten in a loop
 * must not grow the core, nor the work of scrubbing every log line (each value
 * is four forms looked for), without bound.
 */
export const MAX_RETIRED_VALUES = 64;

export interface SecretScrubberOptions {
  /** How long a value rotated away is still looked for, ms. @defaultValue RETIRED_RETENTION_MS */
  readonly retiredRetentionMs?: number;
  /** The clock. @defaultValue Date.now */
  readonly now?: () => number;
}

/** One form of a value the scrubber looks for, and what replaces it. */
export interface Needle {
  readonly text: string;
  readonly replacement: string;
}

interface Retired {
  readonly name: string;
  readonly until: number;
}

export class SecretScrubber {
  private readonly sources = new Map<string, () => readonly ScrubbedValue[]>();
  private needles: Needle[] = [];
  /** The values the sources hold now, with their names. */
  private current = new Map<string, string>();
  /** Values the sources held and no longer do, until their retention ends (oldest first). */
  private readonly retired = new Map<string, Retired>();
  private expiry: NodeJS.Timeout | undefined;
  private readonly retentionMs: number;
  private readonly now: () => number;

  constructor(options: SecretScrubberOptions = {}) {
    this.retentionMs = options.retiredRetentionMs ?? RETIRED_RETENTION_MS;
    this.now = options.now ?? Date.now;
  }

  /** Adds (or replaces) a source of values; call `update()` when a source's values change. */
  addSource(id: string, values: () => readonly ScrubbedValue[]): void {
    this.sources.set(id, values);
    this.update();
  }

  /** Reads every source again; a value no source holds any more is retired, and looked for until its retention ends. */
  update(): void {
    const now = this.now();
    const fresh = new Map<string, string>();
    for (const source of this.sources.values()) {
      for (const { name, value } of source()) if (value.length >= MIN_SCRUBBED_LENGTH && !fresh.has(value)) fresh.set(value, name);
    }
    for (const [value, name] of this.current) if (!fresh.has(value)) this.retired.set(value, { name, until: now + this.retentionMs });
    for (const [value, retired] of this.retired) if (fresh.has(value) || retired.until <= now) this.retired.delete(value);
    for (const value of this.retired.keys()) {
      if (this.retired.size <= MAX_RETIRED_VALUES) break;
      this.retired.delete(value);
    }
    this.current = fresh;
    const needles = new Map<string, Needle>();
    const add = (value: string, name: string): void => {
      const replacement = `[secret:${name}]`;
      for (const form of encodings(value)) if (!needles.has(form)) needles.set(form, { text: form, replacement });
    };
    for (const [value, name] of fresh) add(value, name);
    for (const [value, { name }] of this.retired) add(value, name);
    // Longest first: a value that contains another is replaced whole.
    this.needles = [...needles.values()].sort((a, b) => b.text.length - a.text.length);
    this.scheduleExpiry(now);
  }

  /** Every form looked for, longest first (stream-scrubber.ts holds back what may begin one). */
  get forms(): readonly Needle[] {
    return this.needles;
  }

  /** Drops the retired values whose retention has ended when the first of them does. */
  private scheduleExpiry(now: number): void {
    if (this.expiry !== undefined) clearTimeout(this.expiry);
    this.expiry = undefined;
    let first = Infinity;
    for (const { until } of this.retired.values()) first = Math.min(first, until);
    if (first === Infinity) return;
    // The core's exit never waits for it.
    this.expiry = setTimeout(() => this.update(), Math.max(0, first - now)).unref();
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
