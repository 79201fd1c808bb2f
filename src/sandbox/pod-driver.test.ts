import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { poolSpec } from '../../test/helpers/pool-spec.js';
import { silentLogger } from '../logger.js';
import { PodDriver } from './pod-driver.js';
import type { McpServerLaunch, SandboxSpec } from './sandbox-driver.js';

// A cluster nobody answers at: every case here is refused before the driver talks to the API server.
const kubeConfig = new KubeConfig();
kubeConfig.loadFromOptions({
  clusters: [{ name: 'none', server: 'https://127.0.0.1:1' }],
  users: [{ name: 'none' }],
  contexts: [{ name: 'none', cluster: 'none', user: 'none' }],
  currentContext: 'none',
});
const cache = { root: '/var/lib/uhlp-mcp-packages', volume: { claimName: 'mcp-packages' } };
const withCache = new PodDriver({ logger: silentLogger(), instanceId: 'unit', kubeConfig, namespace: 'ns', packageCache: cache });
const withoutCache = new PodDriver({ logger: silentLogger(), instanceId: 'unit', kubeConfig, namespace: 'ns' });
afterAll(() => Promise.all([withCache.close(), withoutCache.close()]));

const spec = (mcpServer: McpServerLaunch | undefined): SandboxSpec => ({
  appId: 'shop',
  pool: poolSpec({ name: 'memory', runner: 'mcp' }),
  definitionsRoot: '/definitions',
  labels: {},
  ...(mcpServer !== undefined ? { mcpServer } : {}),
});
const packaged = { packageDir: `${cache.root}/0123456789abcdef0123456789abcdef`, entry: 'dist/index.js', args: [] };

describe('the pod driver and runner: mcp pools', () => {
  it.each([
    ['no server', withCache, undefined, /no MCP server names it/],
    ['a script server of the app', withCache, { entry: 'rev/servers/notes.mjs', args: [] }, /a script server of the app runs on the process and Docker drivers only/],
    ['no package cache volume', withoutCache, packaged, /no MCP package cache volume is configured for pods \(UHLP_MCP_PACKAGE_VOLUME\)/],
    ['a package outside the cache', withCache, { ...packaged, packageDir: '/elsewhere/0123456789abcdef0123456789abcdef' }, /is not an entry of the package cache/],
  ] as const)('refuses %s with the reason, before any pod is made', async (_case, driver, mcpServer, reason) => {
    const refused = driver.create(spec(mcpServer));
    await expect(refused).rejects.toMatchObject({ code: 'UHLP_SANDBOX_UNAVAILABLE', details: { app: 'shop', pool: 'memory' } });
    await expect(refused).rejects.toThrow(reason);
  });

  it('prepares nothing for a pool the pods cannot run, nor for other runners', async () => {
    await expect(withoutCache.preparePool(spec(packaged))).resolves.toBeUndefined();
    await expect(withCache.preparePool({ ...spec(undefined), pool: poolSpec({ name: 'main', runner: 'jit' }) })).resolves.toBeUndefined();
  });
});
