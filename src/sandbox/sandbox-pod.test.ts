import { describe, expect, it } from 'vitest';
import { poolSpec } from '../../test/helpers/pool-spec.js';
import { sandboxPod } from './sandbox-pod.js';

type Container = { command: string[]; terminationMessagePolicy: string };
const containerOf = (runner: 'jit' | 'llm' | 'csjs'): Container =>
  ((sandboxPod({ namespace: 'ns', appId: 'shop', pool: poolSpec({ name: 'p', runner }) }, { state: 'warm' }) as { spec: { containers: Container[] } }).spec.containers[0]!);

describe('a sandbox pod', () => {
  it('starts every Node runner under the permission model, and allows native addons to the csjs runner only', () => {
    for (const runner of ['jit', 'llm', 'csjs'] as const) expect(containerOf(runner).command).toContain('--permission');
    expect(containerOf('csjs').command).toContain('--allow-addons');
    expect(containerOf('jit').command).not.toContain('--allow-addons');
    expect(containerOf('llm').command).not.toContain('--allow-addons');
  });

  it('keeps its last log lines as the termination message: they tell a heap exhaustion from a crash', () => {
    expect(containerOf('jit').terminationMessagePolicy).toBe('FallbackToLogsOnError');
  });
});
