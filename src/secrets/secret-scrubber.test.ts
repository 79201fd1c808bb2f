import { describe, expect, it } from 'vitest';
import { MIN_SCRUBBED_LENGTH, SecretScrubber } from './secret-scrubber.js';

describe('the secret scrubber', () => {
  const scrubber = new SecretScrubber();
  let values = [
    { name: 'weather', value: 'canary-"quoted"\\value' },
    { name: 'short', value: 'abc' },
  ];
  scrubber.addSource('test', () => values);

  it.each([
    ['as it is', 'token=canary-"quoted"\\value!', 'token=[secret:weather]!'],
    ['JSON-escaped', JSON.stringify({ t: 'canary-"quoted"\\value' }), '{"t":"[secret:weather]"}'],
    ['percent-encoded', `?k=${encodeURIComponent('canary-"quoted"\\value')}`, '?k=[secret:weather]'],
    ['base64', Buffer.from('canary-"quoted"\\value').toString('base64'), '[secret:weather]'],
  ])('replaces a value %s', (_label, text, expected) => {
    expect(scrubber.scrub(text)).toBe(expected);
  });

  it(`leaves values shorter than ${MIN_SCRUBBED_LENGTH} characters alone (they would eat ordinary words)`, () => {
    expect(scrubber.scrub('abc abc')).toBe('abc abc');
  });

  it('scrubs the strings of a JSON value, keys included, and returns the same value when nothing matched', () => {
    const clean = { a: ['x', { b: 1 }] };
    expect(scrubber.scrubValue(clean)).toBe(clean);
    expect(scrubber.scrubValue({ ['canary-"quoted"\\value']: ['ok', { deep: 'x canary-"quoted"\\value' }] })).toEqual({ '[secret:weather]': ['ok', { deep: 'x [secret:weather]' }] });
  });

  it('works on bytes without touching the bytes around a value', () => {
    const bytes = Buffer.concat([Buffer.from([0xff, 0x00]), Buffer.from('canary-"quoted"\\value'), Buffer.from([0xfe])]);
    expect(scrubber.scrubBytes(bytes)).toEqual(Buffer.concat([Buffer.from([0xff, 0x00]), Buffer.from('[secret:weather]'), Buffer.from([0xfe])]));
  });

  it('learns a rotated value when told, and forgets the old one', () => {
    values = [{ name: 'weather', value: 'rotated-value-2' }];
    scrubber.update();
    expect(scrubber.scrub('rotated-value-2 canary-"quoted"\\value')).toBe('[secret:weather] canary-"quoted"\\value');
  });
});
