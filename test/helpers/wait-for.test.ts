import { describe, expect, it } from 'vitest';
import { waitFor, waitForValue } from './wait-for.js';

describe('waitFor', () => {
  it('resolves once the condition holds', async () => {
    let looks = 0;
    await waitFor(() => ++looks === 3, { intervalMs: 1 });
    expect(looks).toBe(3);
  });

  it('counts a throwing condition as not holding yet, and names its last error at the deadline', async () => {
    await expect(
      waitFor(
        () => {
          throw new Error('still starting');
        },
        { timeoutMs: 20, intervalMs: 1, what: 'the service' },
      ),
    ).rejects.toThrow('timed out waiting for the service; last error: still starting');
  });
});

describe('waitForValue', () => {
  it.each([
    { name: 'a value', answers: [undefined, false, 'ready'], value: 'ready' },
    { name: 'zero is a value', answers: [undefined, 0], value: 0 },
    { name: 'an empty string is a value', answers: [false, ''], value: '' },
  ])('answers $name once the check gives one', async ({ answers, value }) => {
    let look = 0;
    await expect(waitForValue(async () => answers[look++], { intervalMs: 1 })).resolves.toBe(value);
  });

  it('fails at the deadline when the check never answers', async () => {
    await expect(waitForValue(() => undefined, { timeoutMs: 20, intervalMs: 1, what: 'a pod' })).rejects.toThrow('timed out waiting for a pod');
  });
});
