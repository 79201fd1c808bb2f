import { describe, expect, it } from 'vitest';
import { poolSpec } from '../../test/helpers/pool-spec.js';
import { sandboxPod } from './sandbox-pod.js';

type Container = { command: string[]; args: string[]; terminationMessagePolicy: string };
const containerOf = (runner: 'jit' | 'llm' | 'csjs' | 'python'): Container =>
  ((sandboxPod({ namespace: 'ns', appId: 'shop', pool: poolSpec({ name: 'p', runner }) }, { state: 'warm' }) as { spec: { containers: Container[] } }).spec.containers[0]!);

describe('a sandbox pod', () => {
  it('starts every Node runner under the permission model, and allows native addons to the csjs runner only', () => {
    for (const runner of ['jit', 'llm', 'csjs'] as const) expect(containerOf(runner).command).toContain('--permission');
    expect(containerOf('csjs').command).toContain('--allow-addons');
    expect(containerOf('jit').command).not.toContain('--allow-addons');
    expect(containerOf('llm').command).not.toContain('--allow-addons');
  });

  it("has the python runner load the sandboxes' seccomp policy on itself from its image: the runtime's default lets a process fork", () => {
    const { args } = containerOf('python');
    expect(args.slice(args.indexOf('--seccomp-self'), args.indexOf('--seccomp-self') + 2)).toEqual(['--seccomp-self', '/app/seccomp-filter.bpf']);
    for (const runner of ['jit', 'llm', 'csjs'] as const) expect(containerOf(runner).args).not.toContain('--seccomp-self');
  });

  it('keeps its last log lines as the termination message: they tell a heap exhaustion from a crash', () => {
    expect(containerOf('jit').terminationMessagePolicy).toBe('FallbackToLogsOnError');
  });
});
