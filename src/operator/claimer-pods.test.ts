import { ApiException, type CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ClaimerPods } from './claimer-pods.js';

/** A CoreV1Api whose readNamespacedPod answers from `pods` (name -> status), counting reads. */
function fakeCore(pods: Record<string, number>): { core: CoreV1Api; reads: string[] } {
  const reads: string[] = [];
  const core = {
    readNamespacedPod: async ({ name, namespace }: { name: string; namespace: string }) => {
      reads.push(`${namespace}/${name}`);
      const status = pods[`${namespace}/${name}`] ?? 404;
      if (status !== 200) throw new ApiException(status, 'no', '{}', {});
      return { metadata: { name, namespace } };
    },
  } as unknown as CoreV1Api;
  return { core, reads };
}

describe('ClaimerPods', () => {
  it('tells a gone core pod (404) from one that exists, and reads each once within its TTL', async () => {
    let now = 0;
    const { core, reads } = fakeCore({ 'ns/core-a': 200 });
    const claimers = new ClaimerPods(core, () => now);
    expect(await claimers.exists('ns/core-a')).toBe(true);
    expect(await claimers.exists('ns/core-b')).toBe(false);
    expect(await claimers.exists('ns/core-b')).toBe(false);
    expect(reads).toEqual(['ns/core-a', 'ns/core-b']);
    now = 10_000;
    expect(await claimers.exists('ns/core-b')).toBe(false);
    expect(reads).toHaveLength(3);
  });

  it('leaves the pods alone when it cannot tell (no access, an API error, a malformed record)', async () => {
    const { core } = fakeCore({ 'ns/forbidden': 403, 'ns/broken': 500 });
    const claimers = new ClaimerPods(core);
    expect(await claimers.exists('ns/forbidden')).toBe(true);
    expect(await claimers.exists('ns/broken')).toBe(true);
    expect(await claimers.exists('no-slash')).toBe(true);
  });
});
