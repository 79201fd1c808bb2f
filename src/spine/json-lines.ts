/**
 * Newline framing for the spine: a stream of bytes in, whole lines out. A line
 * over the byte limit is dropped up to its newline and reported once, so that
 * one oversized or hostile message cannot grow a buffer without bound nor
 * desynchronise the messages that follow it.
 */

/** What one chunk of input produced: whole lines, and how many oversized lines were dropped. */
export interface SplitResult {
  readonly lines: string[];
  readonly oversized: number;
}

export class LineSplitter {
  private readonly maxLineBytes: number;
  private parts: Buffer[] = [];
  private size = 0;
  /** True while skipping the rest of an oversized line. */
  private discarding = false;

  /** @param maxLineBytes - longest accepted line, newline excluded. */
  constructor(maxLineBytes: number) {
    this.maxLineBytes = maxLineBytes;
  }

  push(chunk: Buffer): SplitResult {
    const lines: string[] = [];
    let oversized = 0;
    let start = 0;
    while (start <= chunk.length) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline === -1 ? chunk.length : newline;
      if (!this.discarding) {
        const piece = chunk.subarray(start, end);
        if (this.size + piece.length > this.maxLineBytes) {
          this.discarding = true;
          this.parts = [];
          this.size = 0;
          oversized += 1;
        } else if (piece.length > 0) {
          this.parts.push(piece);
          this.size += piece.length;
        }
      }
      if (newline === -1) break;
      if (!this.discarding) {
        const line = Buffer.concat(this.parts, this.size).toString('utf8');
        // A lone "\r" before the newline is tolerated for hosts that write CRLF.
        const text = line.endsWith('\r') ? line.slice(0, -1) : line;
        if (text.trim() !== '') lines.push(text);
      }
      this.parts = [];
      this.size = 0;
      this.discarding = false;
      start = newline + 1;
    }
    return { lines, oversized };
  }
}

/** One message on the wire: compact JSON and a newline. */
export function encodeLine(message: unknown): string {
  return `${JSON.stringify(message)}\n`;
}
