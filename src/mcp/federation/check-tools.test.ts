import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { communityPoolSpec, loadCommunityServers } from './community-servers.js';
import { MAX_TOOLS_PER_SERVER, checkTools } from './mcp-federation.js';

const schema = { type: 'object', properties: {} };

describe("a federated server's tool list as the core offers it", () => {
  it('keeps well-named tools with an object schema, once each, under the server prefix', () => {
    const tools = checkTools('app.fs', [
      { name: 'read_file', description: 'reads', inputSchema: schema },
      { name: 'read_file', description: 'a second read_file', inputSchema: schema },
      { name: 'bad name!', inputSchema: schema },
      { name: 'no_schema' },
      { name: 'array_schema', inputSchema: { type: 'array' } },
      { name: 'x'.repeat(129), inputSchema: schema },
      { name: 42, inputSchema: schema },
      { name: 'long_description', description: 'd'.repeat(5000), inputSchema: schema },
    ]);
    expect([...tools.keys()]).toEqual(['app.fs.read_file', 'app.fs.long_description']);
    expect(tools.get('app.fs.read_file')).toMatchObject({ name: 'app.fs.read_file', serverName: 'read_file', description: 'reads' });
    expect(tools.get('app.fs.long_description')!.description).toHaveLength(2048);
  });

  it('cuts a list longer than the limit', () => {
    const many = Array.from({ length: MAX_TOOLS_PER_SERVER + 10 }, (_, i) => ({ name: `t${i}`, inputSchema: schema }));
    expect(checkTools('app.many', many).size).toBe(MAX_TOOLS_PER_SERVER);
  });
});

describe('community servers of the core configuration', () => {
  const file = (text: string): string => {
    const target = path.join(mkdtempSync(path.join(os.tmpdir(), 'uhlp-community-')), 'community.yaml');
    writeFileSync(target, text);
    return target;
  };

  it('reads the servers, with defaults, and the pool each app gets', () => {
    const servers = loadCommunityServers(file('servers:\n  - { name: everything, stdio: { package: { name: "@modelcontextprotocol/server-everything", version: 2026.8.31 }, args: [stdio] } }\n  - { name: web, http: { url: "https://mcp.example.com/mcp" } }\n'));
    expect(servers.map((server) => server.name)).toEqual(['everything', 'web']);
    expect(servers[0]).toMatchObject({ timeoutMs: 10000, maxOutputBytes: 1048576, pool: { minWarm: 0, maxSize: 2 } });
    expect(communityPoolSpec(servers[0]!)).toMatchObject({ name: 'community-everything', runner: 'mcp', minWarm: 0, maxSize: 2, concurrency: 1 });
    expect(loadCommunityServers(undefined)).toEqual([]);
  });

  it.each([
    ['a server that is neither stdio nor http', 'servers:\n  - { name: nothing }\n', /exactly one of stdio and http/],
    ['a stdio server with no package', 'servers:\n  - { name: s, stdio: { args: [] } }\n', /names its package/],
    ['a script (an app file) as a community server', 'servers:\n  - { name: s, stdio: { script: x.mjs } }\n', /stdio/],
    ['a duplicate', 'servers:\n  - { name: w, http: { url: "https://a.example/mcp" } }\n  - { name: w, http: { url: "https://b.example/mcp" } }\n', /twice/],
  ])('refuses %s', (_label, text, message) => {
    expect(() => loadCommunityServers(file(text))).toThrow(message);
  });
});
