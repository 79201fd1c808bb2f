import { describe, expect, it } from 'vitest';
import { LineSplitter, encodeLine } from './json-lines.js';

describe('LineSplitter', () => {
  it('joins lines split across chunks and skips blank lines', () => {
    const splitter = new LineSplitter(100);
    expect(splitter.push(Buffer.from('{"a":')).lines).toEqual([]);
    expect(splitter.push(Buffer.from('1}\n\n{"b"')).lines).toEqual(['{"a":1}']);
    expect(splitter.push(Buffer.from(':2}\r\n')).lines).toEqual(['{"b":2}']);
  });

  it('keeps multi-byte characters split across chunks intact', () => {
    const bytes = Buffer.from('"héllo"\n');
    const splitter = new LineSplitter(100);
    expect(splitter.push(bytes.subarray(0, 3)).lines).toEqual([]);
    expect(splitter.push(bytes.subarray(3)).lines).toEqual(['"héllo"']);
  });

  it('drops an oversized line up to its newline, across chunks, and counts it once', () => {
    const splitter = new LineSplitter(8);
    expect(splitter.push(Buffer.from('0123456789'))).toEqual({ lines: [], oversized: 1 });
    expect(splitter.push(Buffer.from('abcdef\nok\n'))).toEqual({ lines: ['ok'], oversized: 0 });
  });

  it('encodes one compact line per message', () => {
    expect(encodeLine({ type: 'exit' })).toBe('{"type":"exit"}\n');
  });
});
