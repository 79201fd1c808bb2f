/**
 * Keeps the first `limit` bytes of a child's output stream and counts the
 * rest. The stream is always drained to its end: a child blocked on a full
 * pipe would otherwise hang until its timeout.
 */
export class OutputCapture {
  private readonly limit: number;
  private readonly chunks: Buffer[] = [];
  private size = 0;
  /** True once more than `limit` bytes arrived. */
  truncated = false;

  constructor(limit: number) {
    this.limit = limit;
  }

  push(chunk: Buffer): void {
    const room = this.limit - this.size;
    if (chunk.length > room) {
      this.truncated = true;
      if (room > 0) {
        this.chunks.push(chunk.subarray(0, room));
        this.size = this.limit;
      }
      return;
    }
    this.chunks.push(chunk);
    this.size += chunk.length;
  }

  /** The kept bytes as UTF-8; invalid sequences (a cut multi-byte character) become U+FFFD. */
  text(): string {
    return Buffer.concat(this.chunks, this.size).toString('utf8');
  }
}
