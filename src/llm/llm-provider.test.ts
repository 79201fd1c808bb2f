/** A request is checked once: the LLM service's normalized call passes a provider's check as it is, and nothing else does. */
import { describe, expect, it } from 'vitest';
import { normalizedCall, normalizeRequest } from './llm-provider.js';

describe('normalizedCall', () => {
  it('is taken as it is by normalizeRequest, frozen, with the signal and delta listener of the caller', () => {
    const normalized = normalizeRequest({ prompt: 'hi', system: 'be brief', maxTokens: 8 }, 'small');
    const signal = new AbortController().signal;
    const onDelta = (): void => {};
    const call = normalizedCall(normalized, signal, onDelta);
    expect(normalizeRequest(call, 'other')).toBe(call);
    expect(call).toMatchObject({ model: 'small', messages: normalized.messages, maxTokens: 8, signal, onDelta });
    expect(Object.isFrozen(call)).toBe(true);
    expect(normalizedCall(normalized)).not.toHaveProperty('signal');
  });

  it('leaves every other request to the full check: a copy of a normalized call is checked again, and refused when it was changed', () => {
    const call = normalizedCall(normalizeRequest({ prompt: 'hi', maxTokens: 8 }, 'small'));
    const copy = { ...call };
    expect(normalizeRequest(copy)).not.toBe(copy);
    expect(normalizeRequest(copy)).toEqual(normalizeRequest({ prompt: 'hi', maxTokens: 8 }, 'small'));
    expect(() => normalizeRequest({ ...call, maxTokens: 0 })).toThrow(expect.objectContaining({ code: 'UHLP_LLM_INVALID_REQUEST' }));
  });
});
