import { describe, expect, it } from 'vitest';
import { MAX_RETIRED_VALUES, MIN_SCRUBBED_LENGTH, RETIRED_RETENTION_MS, SecretScrubber } from './secret-scrubber.js';

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

  it('learns a rotated value when told', () => {
    values = [{ name: 'weather', value: 'rotated-value-2' }];
    scrubber.update();
    expect(scrubber.scrub('rotated-value-2')).toBe('[secret:weather]');
  });
});

describe('values rotated away', () => {
  const setup = (): { scrubber: SecretScrubber; rotate: (value: string) => void; clock: { now: number } } => {
    const clock = { now: 1_000_000 };
    let values = [{ name: 'api-key', value: 'first-value-1' }];
    const scrubber = new SecretScrubber({ now: () => clock.now });
    scrubber.addSource('test', () => values);
    return {
      scrubber,
      clock,
      rotate: (value) => {
        values = [{ name: 'api-key', value }];
        scrubber.update();
      },
    };
  };

  it(`are still scrubbed for ${RETIRED_RETENTION_MS / 60_000} minutes: a turn that read one before the rotation may answer with it after`, () => {
    const { scrubber, rotate, clock } = setup();
    rotate('second-value-2');
    // An in-flight turn answers with the value it read; the next one with the new value.
    expect(scrubber.scrub('first-value-1 second-value-2')).toBe('[secret:api-key] [secret:api-key]');
    clock.now += RETIRED_RETENTION_MS - 1;
    scrubber.update();
    expect(scrubber.scrub(Buffer.from('first-value-1').toString('base64'))).toMatch(/^\[secret:api-key\]=*$/);
    // Past the retention, only the current value is looked for.
    clock.now += 1;
    scrubber.update();
    expect(scrubber.scrub('first-value-1 second-value-2')).toBe('first-value-1 [secret:api-key]');
  });

  it('outlast the longest execution an app may declare', () => {
    // The schema's maximum limits.timeoutMs: 900 000 ms.
    expect(RETIRED_RETENTION_MS).toBeGreaterThan(900_000);
  });

  it('are dropped on time without another rotation', async () => {
    let values = [{ name: 'api-key', value: 'first-value-1' }];
    const scrubber = new SecretScrubber({ retiredRetentionMs: 50 });
    scrubber.addSource('test', () => values);
    values = [{ name: 'api-key', value: 'second-value-2' }];
    scrubber.update();
    expect(scrubber.scrub('first-value-1')).toBe('[secret:api-key]');
    const deadline = Date.now() + 5_000;
    while (scrubber.scrub('first-value-1') !== 'first-value-1') {
      if (Date.now() > deadline) throw new Error('the retired value was never dropped');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  });

  it('come back to current when a value is rotated back, and are bounded in number', () => {
    const { scrubber, rotate } = setup();
    rotate('second-value-2');
    rotate('first-value-1');
    expect(scrubber.scrub('second-value-2 first-value-1')).toBe('[secret:api-key] [secret:api-key]');
    for (let i = 0; i < MAX_RETIRED_VALUES + 10; i += 1) rotate(`looped-value-${i}`);
    // The oldest retired values went first.
    expect(scrubber.scrub('second-value-2')).toBe('second-value-2');
    expect(scrubber.scrub(`looped-value-${MAX_RETIRED_VALUES}`)).toBe('[secret:api-key]');
  });
});
