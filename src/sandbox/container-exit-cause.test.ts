import { describe, expect, it } from 'vitest';
import { containerExitCause, type ContainerExit } from './container-exit-cause.js';
import type { SandboxExitCause } from './sandbox-driver.js';

const exit = (overrides: Partial<ContainerExit>): ContainerExit => ({ oomKilled: false, exitCode: 1, output: '', ...overrides });

describe('containerExitCause', () => {
  it.each<[string, ContainerExit | undefined, SandboxExitCause | undefined, SandboxExitCause]>([
    ['OOM kill', exit({ oomKilled: true, exitCode: 137 }), undefined, 'oom'],
    ['OOM kill, then destroyed by the core', exit({ oomKilled: true, exitCode: 137 }), 'crash', 'oom'],
    ['destroyed for a timeout', exit({ exitCode: 137 }), 'timeout', 'timeout'],
    ['removed before it could be inspected', undefined, 'recycled', 'recycled'],
    ['V8 abort through init', exit({ exitCode: 134 }), undefined, 'heap-limit'],
    ['V8 trap through init', exit({ exitCode: 133 }), undefined, 'heap-limit'],
    ['heap message with another status', exit({ exitCode: 1, output: 'FATAL ERROR: Reached heap limit Allocation failed' }), undefined, 'heap-limit'],
    ['heap limit, destroyed when its connection dropped', exit({ exitCode: 134 }), 'crash', 'heap-limit'],
    ['heap message, destroyed when its connection dropped', exit({ exitCode: 137, output: 'python-runner: FATAL: heap out of memory' }), 'crash', 'heap-limit'],
    ['killed after its connection dropped', exit({ exitCode: 137 }), 'crash', 'crash'],
    ['script called process.exit', exit({ exitCode: 7 }), undefined, 'crash'],
    ['killed from outside', exit({ exitCode: 137 }), undefined, 'crash'],
    ['gone without a trace', undefined, undefined, 'crash'],
  ])('%s', (_, state, destroyCause, expected) => {
    expect(containerExitCause(state, destroyCause)).toBe(expected);
  });
});
