import { describe, expect, it } from 'vitest';
import { newTurnRing, TurnRingReader, TurnRingWriter } from './turn-ring.js';

/** A writer and a reader of one ring, in this thread: the reader drains when told. */
function pair(bytes: number): { writer: TurnRingWriter; reader: TurnRingReader; lines: string[] } {
  const memory = newTurnRing(bytes);
  const lines: string[] = [];
  return { writer: new TurnRingWriter(memory), reader: new TurnRingReader(memory, (text) => lines.push(...text.split('\n').slice(0, -1))), lines };
}

describe('the turn ring', () => {
  it('hands over whole lines in order, across the wrap, multi-byte characters split by it included', () => {
    const { writer, reader, lines } = pair(64);
    const sent: string[] = [];
    for (let i = 0; i < 200; i++) {
      // 20 to 40 bytes each, with two- and four-byte characters: ends and wraps fall everywhere.
      const line = `${i}\t${'é'.repeat(i % 7)}\t${'😀'.repeat(i % 3)}\t${'x'.repeat(i % 11)}`;
      writer.write(`${line}\n`);
      sent.push(line);
      if (i % 3 === 2) reader.drain();
    }
    while (writer.backlog > 0) {
      reader.drain();
      (writer as unknown as { pushWaiting(): void }).pushWaiting();
    }
    reader.drain();
    writer.abandon();
    expect(lines).toEqual(sent);
  });

  it('carries a line longer than the ring in pieces, the lines behind it after it', () => {
    const { writer, reader, lines } = pair(32);
    const long = 'L'.repeat(500);
    writer.write('first\n');
    writer.write(`${long}\n`);
    writer.write('after\n');
    expect(writer.backlog).toBe(2);
    for (let i = 0; i < 100 && writer.backlog > 0; i++) {
      reader.drain();
      (writer as unknown as { pushWaiting(): void }).pushWaiting();
    }
    reader.drain();
    writer.abandon();
    expect(lines).toEqual(['first', long, 'after']);
  });

  it('a reader gets nothing of a line until its end is in the ring', () => {
    const { writer, reader, lines } = pair(16);
    writer.write('0123456789abcdefghij\n');
    expect(reader.drain()).toBe(16);
    expect(lines).toEqual([]);
    (writer as unknown as { pushWaiting(): void }).pushWaiting();
    reader.drain();
    expect(lines).toEqual(['0123456789abcdefghij']);
    expect(writer.abandon()).toEqual({ lines: 0, cut: false });
  });

  it('abandon() says what was dropped, and whether a line was cut in two', () => {
    const { writer } = pair(16);
    writer.write('0123456789abcdefghij\n');
    writer.write('next\n');
    expect(writer.abandon()).toEqual({ lines: 2, cut: true });
  });

  it('refuses a size that is not a power of two', () => {
    expect(() => newTurnRing(1000)).toThrow(RangeError);
    expect(() => newTurnRing(8)).toThrow(RangeError);
  });
});
