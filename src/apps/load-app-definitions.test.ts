import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadAppDefinitions } from './load-app-definitions.js';

describe('loadAppDefinitions', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-load-apps-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  /** An app whose one remote MCP server sends the secret `secret` in a header. */
  function app(name: string, secret: string): { name: string; dir: string } {
    const dir = path.join(root, name);
    mkdirSync(path.join(dir, 'scripts'), { recursive: true });
    writeFileSync(path.join(dir, 'scripts', 'a.js'), 'export default () => ({})\n');
    writeFileSync(
      path.join(dir, 'app.yaml'),
      [
        'apiVersion: uhlp.dev/v1alpha1',
        'kind: AppDefinition',
        `metadata: { name: ${name} }`,
        'spec:',
        '  pools: [{ name: node }]',
        '  components: [{ id: a, handler: JIT, pool: node, jit: { script: scripts/a.js } }]',
        '  mcpServers:',
        `    - { name: search, http: { url: "https://search.example/mcp", headers: [{ name: Authorization, secretRef: { name: ${secret}, key: token } }] } }`,
      ].join('\n'),
    );
    return { name, dir };
  }

  it("reports an app whose remote server's header names another app's secret, at the field, and loads the app that names its own", async () => {
    // Each app's own secrets: shop has shop-search, blog has blog-search.
    const own: Record<string, string> = { shop: 'shop-search', blog: 'blog-search' };
    const loaded = await loadAppDefinitions({ apps: [app('shop', 'shop-search'), app('blog', 'shop-search')], badNames: [] }, (appId, name) => own[appId] === name);
    expect(loaded.documents.map((d) => d.document.metadata.name)).toEqual(['shop']);
    expect(loaded.problems).toEqual([
      { file: 'apps/blog/app.yaml', path: '/spec/mcpServers/0/http/headers/0/secretRef/name', reason: expect.stringContaining('the app has no secret "shop-search"') },
    ]);
  });
});
