import { describe, expect, it } from 'vitest';
import * as labels from './sandbox-labels.js';

/**
 * The labels are a wire format: running containers and pods, SandboxPools in a
 * cluster and the chart's NetworkPolicy carry them, so a changed spelling orphans
 * every sandbox a core would adopt. Each is pinned here.
 */
describe('sandbox labels', () => {
  const expected: Record<keyof typeof labels, string> = {
    LABEL_APP: 'uhlp.dev/app',
    LABEL_POOL: 'uhlp.dev/pool',
    LABEL_INSTANCE: 'uhlp.dev/instance',
    LABEL_CONFIG: 'uhlp.dev/config-hash',
    LABEL_SOCKET_DIR: 'uhlp.dev/socket-dir',
    LABEL_WORK_DIR: 'uhlp.dev/work-dir',
    LABEL_ROLE: 'uhlp.dev/role',
    ROLE_SANDBOX: 'sandbox',
    LABEL_SANDBOX_STATE: 'uhlp.dev/sandbox-state',
    LABEL_CLAIMED_BY: 'uhlp.dev/claimed-by',
    LABEL_SANDBOX_POOL: 'uhlp.dev/sandbox-pool',
    ANNOTATION_CLAIMER_POD: 'uhlp.dev/claimer-pod',
  };

  it.each(Object.entries(expected))('%s is %s', (name, value) => {
    expect(labels[name as keyof typeof labels]).toBe(value);
  });

  it('names every export above, and no two keys alike', () => {
    expect(Object.keys(labels).sort()).toEqual(Object.keys(expected).sort());
    const keys = Object.entries(labels).filter(([name]) => name !== 'ROLE_SANDBOX').map(([, value]) => value);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
