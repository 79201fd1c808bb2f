import { describe, expect, it } from 'vitest';
import { luhnValid, redactPii, redactPiiDeep, StreamRedactor } from './pii-redact.js';

describe('pii-redact', () => {
  it('redacts e-mail addresses, phone numbers and Luhn-valid card numbers', () => {
    expect(redactPii('write to ada@example.com or call +44 20 7946 0958')).toBe('write to [email] or call [phone]');
    expect(redactPii('card 4111 1111 1111 1111 please')).toBe('card [card] please');
    expect(redactPii('call (555) 123-4567')).toBe('call [phone]');
  });

  it('leaves card-shaped numbers that fail Luhn, dates and short numbers alone', () => {
    expect(luhnValid('4111111111111111')).toBe(true);
    expect(luhnValid('4111111111111112')).toBe(false);
    expect(redactPii('order 4111 1111 1111 1112')).not.toContain('[card]');
    expect(redactPii('due 2024-01-15, 3 items')).toBe('due 2024-01-15, 3 items');
  });

  it('redacts every string of a JSON value, keys left as they are', () => {
    expect(redactPiiDeep({ to: 'ada@example.com', list: ['x', 'bob@example.org'], n: 4 })).toEqual({ to: '[email]', list: ['x', '[email]'], n: 4 });
  });

  it('finds a number split across stream chunks', () => {
    const stream = new StreamRedactor();
    const out = ['my card is 4111 11', '11 1111 1111 and mail a', 'da@example.com', ' bye'].map((chunk) => stream.push(chunk)).join('') + stream.flush();
    expect(out).toBe('my card is [card] and mail [email] bye');
  });
});
