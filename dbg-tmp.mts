import { PackageCache } from './src/mcp/federation/package-cache.ts';
const cache = new PackageCache('/tmp/uhlp-mcp-package-cache');
for (const name of ['@modelcontextprotocol/server-memory', '@modelcontextprotocol/server-filesystem', '@modelcontextprotocol/server-everything']) {
  const t = Date.now();
  console.log(await cache.install({ name, version: '2026.8.31' }), Date.now() - t, 'ms');
}
