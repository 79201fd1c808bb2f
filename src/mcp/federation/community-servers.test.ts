import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkCommunitySecrets, loadCommunityServers } from './community-servers.js';
import { parseSecrets } from '../../secrets/secret-file.js';

describe('the community file', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-community-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (text: string): string => {
    const at = path.join(dir, `c-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(at, text);
    return at;
  };

  it('reads the documented format, with its defaults', () => {
    const servers = loadCommunityServers(
      file(
        [
          'servers:',
          '  - name: everything',
          '    stdio: { package: { name: "@modelcontextprotocol/server-everything", version: 2026.8.31 }, args: [stdio] }',
          '    pool: { maxSize: 3 }',
          '  - name: web',
          '    http: { url: "https://mcp.internal.example/mcp", headers: [{ name: X-Api-Key, secretRef: { name: web, key: key } }] }',
        ].join('\n'),
      ),
    );
    expect(servers.map((server) => server.name)).toEqual(['everything', 'web']);
    expect(servers[0]!.pool).toMatchObject({ minWarm: 0, maxSize: 3, maxUses: 1000, idleTtlSeconds: 300 });
    expect(servers[1]).toMatchObject({ timeoutMs: 10_000, maxOutputBytes: 1_048_576 });
  });

  it.each([
    ['an unknown key', 'servers: []\nother: 1\n', /UHLP_MCP_COMMUNITY_FILE/],
    ['both stdio and http', 'servers:\n  - { name: x, http: { url: "https://a.example/mcp" }, stdio: { package: { name: p, version: 1.0.0 } } }\n', /exactly one of stdio and http/],
    ['a name twice', 'servers:\n  - { name: x, http: { url: "https://a.example/mcp" } }\n  - { name: x, http: { url: "https://b.example/mcp" } }\n', /declared twice/],
  ])('refuses %s', (_label, text, message) => {
    expect(() => loadCommunityServers(file(text))).toThrow(message);
  });

  it("refuses at start a header naming a secret the community section does not hold (an app's included)", () => {
    const servers = loadCommunityServers(file('servers:\n  - { name: web, http: { url: "https://a.example/mcp", headers: [{ name: X-Api-Key, secretRef: { name: web, key: key } }] } }\n'));
    const secrets = parseSecrets({ apps: { shop: { web: { key: 'app-owned' } } } }, 'secrets.yaml');
    expect(() => checkCommunitySecrets(servers, (name, key) => secrets.ofCommunity(name, key) !== undefined)).toThrow(/community server web: http\.headers\[0\]\.secretRef names secret "web" key "key"/);
    const held = parseSecrets({ community: { web: { key: 'k' } } }, 'secrets.yaml');
    expect(() => checkCommunitySecrets(servers, (name, key) => held.ofCommunity(name, key) !== undefined)).not.toThrow();
  });
});
