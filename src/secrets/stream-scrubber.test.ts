import { describe, expect, it } from 'vitest';
import { SecretScrubber } from './secret-scrubber.js';
import { scrubbedChunks, StreamScrubber } from './stream-scrubber.js';

const VALUE = 'canary-streamed-value';

function scrubberOf(...values: string[]): SecretScrubber {
  const scrubber = new SecretScrubber();
  scrubber.addSource('test', () => values.map((value, i) => ({ name: `s${i}`, value })));
  return scrubber;
}

/** Every way of cutting `text` in two, and in three. */
function cuts(text: string): string[][] {
  const out: string[][] = [];
  for (let i = 0; i <= text.length; i += 1) {
    out.push([text.slice(0, i), text.slice(i)]);
    for (let j = i; j <= text.length; j += 1) out.push([text.slice(0, i), text.slice(i, j), text.slice(j)]);
  }
  return out;
}

describe('a stream scrubber', () => {
  it('replaces a value however the stream cuts it', () => {
    const text = `before ${VALUE} between ${JSON.stringify(VALUE).slice(1, -1)} after`;
    for (const pieces of cuts(text)) {
      const stream = new StreamScrubber(scrubberOf(VALUE));
      const out = pieces.map((piece) => stream.push(piece)).join('') + stream.end();
      expect(out, JSON.stringify(pieces)).toBe('before [secret:s0] between [secret:s0] after');
    }
  });

  it('holds back only what may begin a value, so an ordinary stream is not delayed', () => {
    const stream = new StreamScrubber(scrubberOf(VALUE));
    expect(stream.push('data: hello\n\n')).toBe('data: hello\n\n');
    // "can" may begin the value: held until the next piece says otherwise.
    expect(stream.push('I can')).toBe('I ');
    expect(stream.push('not')).toBe('cannot');
    expect(stream.push(' canary-stre')).toBe(' ');
    expect(stream.push('amed-value!')).toBe('[secret:s0]!');
    expect(stream.end()).toBe('');
  });

  it('gives back what it held when the stream ends', () => {
    const stream = new StreamScrubber(scrubberOf(VALUE));
    expect(stream.push('ends with canary-')).toBe('ends with ');
    expect(stream.end()).toBe('canary-');
  });

  it('passes everything through when there is nothing to look for', () => {
    const stream = new StreamScrubber(new SecretScrubber());
    expect(stream.push('canary-')).toBe('canary-');
  });

  it('scrubs the bytes of a streamed answer, a value split across chunks and multi-byte characters included', async () => {
    const value = 'clé-secrète-€-42';
    const body = Buffer.from(`{"a":"${value}","b":"ünïcode ${value}"}`);
    for (let i = 1; i < body.length; i += 1) {
      async function* chunks(): AsyncGenerator<string | Buffer> {
        yield body.subarray(0, i);
        yield body.subarray(i);
      }
      const out: Buffer[] = [];
      for await (const piece of scrubbedChunks(chunks(), scrubberOf(value))) out.push(piece);
      expect(Buffer.concat(out).toString('utf8'), `cut at ${i}`).toBe('{"a":"[secret:s0]","b":"ünïcode [secret:s0]"}');
    }
  });
});
