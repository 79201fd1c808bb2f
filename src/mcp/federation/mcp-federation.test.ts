import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AppSnapshot } from '../../apps/app-snapshot.js';
import type { CapabilitiesSpec } from '../../apps/schema/app-definition-schema.js';
import { validateAppDefinition } from '../../apps/validation/validate-app-definition.js';
import { silentLogger } from '../../logger.js';
import { createMetrics, type Metrics } from '../../metrics.js';
import { startRawMcpServer, type RawMcpServer } from '../../../test/helpers/raw-mcp-server.js';
import type { ExecutionGrant } from '../mcp-token-service.js';
import { ToolCallRecorder } from '../tool-call-recorder.js';
import { McpFederation } from './mcp-federation.js';
import type { PackageCache } from './package-cache.js';
import { parseSecrets } from '../../secrets/secret-file.js';

/** An app whose one remote server, `search`, sends the app's secret `search` as its Authorization. */
function app(name: string, url: string, mcp: CapabilitiesSpec['mcp']): { file: string; document: ReturnType<typeof document> } {
  return { file: `apps/${name}/app.yaml`, document: document(name, url, mcp) };
}

function document(name: string, url: string, mcp: CapabilitiesSpec['mcp']) {
  const result = validateAppDefinition(
    {
      apiVersion: 'uhlp.dev/v1alpha1',
      kind: 'AppDefinition',
      metadata: { name },
      spec: {
        pools: [{ name: 'p' }],
        components: [{ id: 'c', handler: 'JIT', pool: 'p', jit: { script: 'x.js' } }],
        mcpServers: [{ name: 'search', http: { url, headers: [{ name: 'Authorization', prefix: 'Bearer ', secretRef: { name: 'search', key: 'token' } }] } }],
        capabilities: { mcp },
      },
    },
    { file: `apps/${name}/app.yaml`, appDirName: name, fileExists: () => true },
  );
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return result.document;
}

function grantOf(appId: string, capabilities: CapabilitiesSpec): ExecutionGrant {
  return { appId, componentId: 'c', requestId: 'r', revision: 'rev', capabilities, calls: new ToolCallRecorder(), expiresAt: Date.now() + 60_000, ended: false } as unknown as ExecutionGrant;
}

describe('McpFederation', () => {
  let remote: RawMcpServer;
  let metrics: Metrics;
  let federation: McpFederation;
  const shopMcp = { allow: ['app.search.*'], forbidden: ['app.search.delete'] };
  const blogMcp = { allow: ['app.search.*'], forbidden: [] };

  beforeAll(async () => {
    remote = await startRawMcpServer({ tools: [{ name: 'find', inputSchema: { type: 'object' } }, { name: 'delete', inputSchema: { type: 'object' } }] });
  });
  afterAll(async () => {
    await remote.close();
  });

  function start(): McpFederation {
    metrics = createMetrics({ defaultMetrics: false });
    federation = new McpFederation({
      appPool: () => undefined,
      packages: {} as PackageCache,
      secrets: parseSecrets({ apps: { shop: { search: { token: 'shop-token' } }, blog: { search: { token: 'blog-token' } } }, community: { search: { token: 'operator-token' } } }, 'secrets.yaml'),
      allowPrivate: [remote.hostPort],
      metrics,
      logger: silentLogger(),
    });
    federation.sync(new AppSnapshot('rev', [app('shop', remote.url, shopMcp), app('blog', remote.url, blogMcp)], []));
    return federation;
  }
  afterEach(async () => {
    await federation?.close();
  });

  async function callsCounted(): Promise<Array<Record<string, unknown>>> {
    return (await metrics.mcpFederatedCalls.get()).values.map((value) => ({ ...value.labels, count: value.value }));
  }

  it('sends each app its own secret, never another app\'s or the operator\'s', async () => {
    start();
    remote.authorizations.length = 0;
    await federation.call(grantOf('shop', { mcp: shopMcp }), 'app.search.find', {}, AbortSignal.timeout(5_000));
    const shopSaw = new Set(remote.authorizations);
    remote.authorizations.length = 0;
    await federation.call(grantOf('blog', { mcp: blogMcp }), 'app.search.find', {}, AbortSignal.timeout(5_000));
    expect([...shopSaw]).toEqual(['Bearer shop-token']);
    expect([...new Set(remote.authorizations)]).toEqual(['Bearer blog-token']);
  });

  it('counts a refused call of a tool the server lists under that tool, and any other name as unknown', async () => {
    start();
    const grant = grantOf('shop', { mcp: shopMcp });
    // A script calls without listing first: the refusal still names the tool the server lists.
    const refused = await federation.call(grant, 'app.search.delete', {}, AbortSignal.timeout(5_000));
    expect(refused.structuredContent).toMatchObject({ code: 'UHLP_CAPABILITY_DENIED' });
    const unlisted = await federation.call(grant, 'app.search.nothing-like-it', {}, AbortSignal.timeout(5_000));
    expect(unlisted.structuredContent).toMatchObject({ code: 'UHLP_MCP_TOOL_NOT_FOUND' });
    // A name the server does not list, refused by the capability, is not a label of its own.
    await federation.call(grantOf('shop', { mcp: { allow: ['app.search.find'], forbidden: [] } }), 'app.search.made-up-name-1', {}, AbortSignal.timeout(5_000));
    expect(await callsCounted()).toEqual(
      expect.arrayContaining([
        { app: 'shop', server: 'app.search', tool: 'delete', outcome: 'UHLP_CAPABILITY_DENIED', count: 1 },
        { app: 'shop', server: 'app.search', tool: 'unknown', outcome: 'UHLP_MCP_TOOL_NOT_FOUND', count: 1 },
        { app: 'shop', server: 'app.search', tool: 'unknown', outcome: 'UHLP_CAPABILITY_DENIED', count: 1 },
      ]),
    );
    expect(remote.calls).not.toContain('delete');
  });
});
