import { describe, expect, it } from 'vitest';
import { podExitCause } from './pod-exit-cause.js';

describe('podExitCause', () => {
  it.each([
    { name: 'OOMKilled wins over the cause the core gave', termination: { reason: 'OOMKilled', exitCode: 137 }, destroy: 'timeout', want: 'oom' },
    { name: 'the cause the core gave', termination: { reason: 'Error', exitCode: 143 }, destroy: 'recycled', want: 'recycled' },
    { name: 'a V8 heap abort', termination: { reason: 'Error', exitCode: 134 }, destroy: undefined, want: 'heap-limit' },
    { name: 'a heap message in the termination message', termination: { reason: 'Error', exitCode: 1, message: 'FATAL ERROR: Reached heap limit' }, destroy: undefined, want: 'heap-limit' },
    { name: 'a heap abort whose connection dropped first', termination: { reason: 'Error', exitCode: 134 }, destroy: 'crash', want: 'heap-limit' },
    { name: 'any other exit', termination: { reason: 'Error', exitCode: 7 }, destroy: undefined, want: 'crash' },
    { name: 'deleted by the core before it ended', termination: undefined, destroy: 'idle', want: 'idle' },
    { name: 'deleted by someone else', termination: undefined, destroy: undefined, want: 'crash' },
  ] as const)('$name', ({ termination, destroy, want }) => {
    expect(podExitCause(termination, destroy)).toBe(want);
  });
});
