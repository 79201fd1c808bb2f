/**
 * Scrubbing of a text that comes in pieces (a streamed answer, a model's
 * tokens): a value split across two pieces is in neither, so each piece is
 * scrubbed together with what was held back of the one before, and what may
 * be the beginning of a value is held back again. What is held is at most the
 * longest form looked for less one character, and only ever the end of the
 * text that matches the beginning of a form: a piece that cannot begin a value
 * goes out whole, at once, and a stream that holds no secret is never delayed.
 */
import type { Needle, SecretScrubber } from './secret-scrubber.js';

/** What a stream is scrubbed with: SecretScrubber itself, or a view of it. */
export interface TextScrubber {
  readonly active: boolean;
  /** Every form looked for. */
  readonly forms: readonly Needle[];
  scrub(text: string): string;
}

export class StreamScrubber {
  private held = '';

  constructor(private readonly scrubber: TextScrubber) {}

  /** The piece, scrubbed, less what may begin a value (sent with the next piece, or by `end()`). */
  push(piece: string): string {
    if (!this.scrubber.active) {
      const out = this.held + piece;
      this.held = '';
      return out;
    }
    const text = this.scrubber.scrub(this.held + piece);
    const keep = this.heldLength(text);
    this.held = text.slice(text.length - keep);
    return text.slice(0, text.length - keep);
  }

  /** What is still held, scrubbed: the stream ended. */
  end(): string {
    const out = this.scrubber.scrub(this.held);
    this.held = '';
    return out;
  }

  /**
   * The length of the longest end of `text` that is the beginning (not the
   * whole: those were replaced) of a form the scrubber looks for. Any value
   * that starts before it would have ended within the text, and was replaced.
   */
  private heldLength(text: string): number {
    let longest = 0;
    for (const { text: form } of this.scrubber.forms) {
      for (let length = Math.min(form.length - 1, text.length); length > longest; length -= 1) {
        if (text.endsWith(form.slice(0, length))) {
          longest = length;
          break;
        }
      }
    }
    return longest;
  }
}

/**
 * A streamed answer's pieces, scrubbed on the way out: the bytes, read as
 * latin1 (one character per byte, so a multi-byte character split across two
 * pieces is carried over intact), with the values' UTF-8 bytes looked for.
 */
export async function* scrubbedChunks(chunks: AsyncIterable<string | Buffer>, scrubber: SecretScrubber): AsyncGenerator<Buffer> {
  const stream = new StreamScrubber(new Latin1View(scrubber));
  for await (const chunk of chunks) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const out = stream.push(bytes.toString('latin1'));
    if (out !== '') yield Buffer.from(out, 'latin1');
  }
  const rest = stream.end();
  if (rest !== '') yield Buffer.from(rest, 'latin1');
}

/** The scrubber's forms as latin1 strings of their UTF-8 bytes, so that text read byte for byte matches them. */
class Latin1View implements TextScrubber {
  private of: readonly Needle[] | undefined;
  private mapped: readonly Needle[] = [];

  constructor(private readonly scrubber: SecretScrubber) {}

  get active(): boolean {
    return this.scrubber.active;
  }

  get forms(): readonly Needle[] {
    // Mapped again only when the scrubber's forms changed (a rotation).
    if (this.of !== this.scrubber.forms) {
      this.of = this.scrubber.forms;
      this.mapped = this.of.map((form) => ({ text: Buffer.from(form.text).toString('latin1'), replacement: form.replacement }));
    }
    return this.mapped;
  }

  scrub(text: string): string {
    return this.scrubber.scrubBytes(Buffer.from(text, 'latin1')).toString('latin1');
  }
}
