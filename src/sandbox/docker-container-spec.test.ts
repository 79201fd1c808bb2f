import { describe, expect, it } from 'vitest';
import { poolSpec } from '../../test/helpers/pool-spec.js';
import { containerConfigHash, containerCreateOptions } from './docker-container-spec.js';
import type { SandboxSpec } from './sandbox-driver.js';
import { LABEL_APP, LABEL_CONFIG, LABEL_INSTANCE, LABEL_POOL, LABEL_SOCKET_DIR, LABEL_WORK_DIR } from './sandbox-labels.js';

const spec: SandboxSpec = { appId: 'shop', pool: poolSpec({ name: 'node', runner: 'jit' }), definitionsRoot: '/defs/shop', labels: { extra: 'x' } };
const settings = { instanceId: 'i1', user: '1000:1000' };

describe('the Docker container spec', () => {
  it('hashes a configuration as earlier versions did, so a restarted core adopts their containers', () => {
    // Layout 5: /dev/shm and /dev/mqueue read-only; containers of layout 4 (309b5030d3ac2176) had them writable and are not adopted.
    expect(containerConfigHash(spec, settings)).toBe('8c8a0851fd7d62cf');
    expect(containerConfigHash({ ...spec, network: true }, settings)).not.toBe('8c8a0851fd7d62cf');
    expect(containerConfigHash(spec, { ...settings, heapShare: 0.7 })).not.toBe('8c8a0851fd7d62cf');
  });

  it('labels a container with what adoption and cleanup find it by', () => {
    const options = containerCreateOptions(spec, settings, { id: 'abc', socketDir: '/s/abc', workDir: '/w/abc' });
    expect(options.Labels).toEqual({
      extra: 'x',
      [LABEL_APP]: 'shop',
      [LABEL_POOL]: 'node',
      [LABEL_INSTANCE]: 'i1',
      [LABEL_SOCKET_DIR]: '/s/abc',
      [LABEL_WORK_DIR]: '/w/abc',
      [LABEL_CONFIG]: '8c8a0851fd7d62cf',
    });
  });

  it("makes the IPC namespace's /dev/shm and /dev/mqueue read-only, where one session could leave a file for the next", () => {
    const options = containerCreateOptions(spec, settings, { id: 'abc', socketDir: '/s/abc', workDir: '/w/abc' });
    expect(options.HostConfig?.Mounts).toEqual([
      expect.objectContaining({ Type: 'tmpfs', Target: '/dev/shm', ReadOnly: true }),
      expect.objectContaining({ Type: 'tmpfs', Target: '/dev/mqueue', ReadOnly: true }),
    ]);
  });

  it('gives a sandbox no network and a read-only root unless it asks for a network, which is published on loopback only', () => {
    const closed = containerCreateOptions(spec, settings, { id: 'abc', socketDir: '/s/abc', workDir: '/w/abc' });
    expect(closed.HostConfig).toMatchObject({ NetworkMode: 'none', ReadonlyRootfs: true, CapDrop: ['ALL'], NanoCpus: 0 });
    expect(closed.ExposedPorts).toBeUndefined();
    const open = containerCreateOptions({ ...spec, network: true }, settings, { id: 'abc', socketDir: undefined, workDir: '/w/abc' });
    expect(open.HostConfig).toMatchObject({ NetworkMode: 'bridge', PortBindings: { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] } });
  });
});
