import { describe, expect, it } from 'vitest';
import { poolSpec } from '../../test/helpers/pool-spec.js';
import { containerConfigHash, containerCreateOptions } from './docker-container-spec.js';
import type { SandboxSpec } from './sandbox-driver.js';
import { LABEL_APP, LABEL_CONFIG, LABEL_INSTANCE, LABEL_POOL, LABEL_SOCKET_DIR, LABEL_WORK_DIR } from './sandbox-labels.js';

const spec: SandboxSpec = { appId: 'shop', pool: poolSpec({ name: 'node', runner: 'jit' }), definitionsRoot: '/defs/shop', labels: { extra: 'x' } };
const settings = { instanceId: 'i1', user: '1000:1000' };

describe('the Docker container spec', () => {
  it('hashes a configuration as earlier versions did, so a restarted core adopts their containers', () => {
    expect(containerConfigHash(spec, settings)).toBe('309b5030d3ac2176');
    expect(containerConfigHash({ ...spec, network: true }, settings)).not.toBe('309b5030d3ac2176');
    expect(containerConfigHash(spec, { ...settings, heapShare: 0.7 })).not.toBe('309b5030d3ac2176');
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
      [LABEL_CONFIG]: '309b5030d3ac2176',
    });
  });

  it('gives a sandbox no network and a read-only root unless it asks for a network, which is published on loopback only', () => {
    const closed = containerCreateOptions(spec, settings, { id: 'abc', socketDir: '/s/abc', workDir: '/w/abc' });
    expect(closed.HostConfig).toMatchObject({ NetworkMode: 'none', ReadonlyRootfs: true, CapDrop: ['ALL'], NanoCpus: 0 });
    expect(closed.ExposedPorts).toBeUndefined();
    const open = containerCreateOptions({ ...spec, network: true }, settings, { id: 'abc', socketDir: undefined, workDir: '/w/abc' });
    expect(open.HostConfig).toMatchObject({ NetworkMode: 'bridge', PortBindings: { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] } });
  });
});
