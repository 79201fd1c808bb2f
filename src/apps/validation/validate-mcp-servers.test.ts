import { describe, expect, it } from 'vitest';
import type { AppSpec } from '../schema/app-definition-schema.js';
import { isFederatedToolName, mcpServerProblems } from './validate-mcp-servers.js';

const pool = (name: string, runner: 'jit' | 'mcp') => ({ name, runner, minWarm: 0, maxSize: 1, maxUses: 10, concurrency: 1, idleTtlSeconds: 60, maxQueue: 1, acquireTimeoutMs: 100, limits: { memoryMb: 64, cpus: 1, timeoutMs: 100 } });
const server = (name: string, stdio: Record<string, unknown> | undefined, http?: Record<string, unknown>) => ({
  name,
  ...(stdio ? { stdio: { args: [], env: [], ...stdio } } : {}),
  ...(http ? { http: { headers: [], ...http } } : {}),
  timeoutMs: 1000,
  maxOutputBytes: 1024,
});
const spec = (mcpServers: unknown[], pools = [pool('main', 'jit'), pool('fs', 'mcp')]): AppSpec =>
  ({ pools, components: [{ id: 'c', handler: 'JIT', pool: 'main', jit: { script: 's.mjs', function: 'f' } }], mcpServers }) as unknown as AppSpec;
const exists = (file: string): boolean => file === 'servers/ok.mjs';
const pkg = { name: '@modelcontextprotocol/server-filesystem', version: '2026.8.31' };

describe('spec.mcpServers rules', () => {
  it.each([
    ['a package server in its own mcp pool', [server('fs', { pool: 'fs', package: pkg })], []],
    ['an http server', [server('web', undefined, { url: 'https://x.example/mcp' }), server('fs', { pool: 'fs', package: pkg })], []],
    ['both stdio and http', [server('fs', { pool: 'fs', package: pkg }, { url: 'https://x.example/mcp' })], ['/spec/mcpServers/0', '/spec/pools/1/runner']],
    ['a package and a script', [server('fs', { pool: 'fs', package: pkg, script: 'servers/ok.mjs' })], ['/spec/mcpServers/0/stdio']],
    ['a script that leaves the app', [server('fs', { pool: 'fs', script: '../x.mjs' })], ['/spec/mcpServers/0/stdio/script']],
    ['a script that is not there', [server('fs', { pool: 'fs', script: 'servers/no.mjs' })], ['/spec/mcpServers/0/stdio/script']],
    ['a pool of another runner', [server('fs', { pool: 'main', package: pkg })], ['/spec/mcpServers/0/stdio/pool', '/spec/pools/1/runner']],
    ['two servers in one pool', [server('fs', { pool: 'fs', package: pkg }), server('fs2', { pool: 'fs', package: pkg })], ['/spec/mcpServers/1/stdio/pool']],
    ['a duplicate name', [server('fs', { pool: 'fs', package: pkg }), server('fs', undefined, { url: 'https://x.example/mcp' })], ['/spec/mcpServers/1/name']],
    ['an mcp pool no server runs in', [], ['/spec/pools/1/runner']],
  ])('%s', (_label, servers, paths) => {
    expect(mcpServerProblems(spec(servers), exists).map(([at]) => at)).toEqual(paths);
  });

  it("refuses a header's secretRef that names no secret of the app's own (another app's, or none), naming the field", () => {
    // The app's own secrets: `search` with key `token`. Anything else is another owner's or nobody's.
    const own = (name: string, key?: string): boolean => name === 'search' && (key === undefined || key === 'token');
    const header = (name: string, key: string) => ({ name: 'Authorization', secretRef: { name, key } });
    const servers = [
      server('fs', { pool: 'fs', package: pkg }),
      server('web', undefined, { url: 'https://x.example/mcp', headers: [header('search', 'token'), header('blog-search', 'token'), header('search', 'other')] }),
    ];
    const problems = mcpServerProblems(spec(servers), exists, own);
    expect(problems.map(([at]) => at)).toEqual(['/spec/mcpServers/1/http/headers/1/secretRef/name', '/spec/mcpServers/1/http/headers/2/secretRef/key']);
    expect(problems[0]![1]).toMatch(/the app has no secret "blog-search"/);
    // A reader that holds no secrets (the operator) does not check them.
    expect(mcpServerProblems(spec(servers), exists)).toEqual([]);
  });

  it('knows federated tool names of the servers the app declares', () => {
    const app = spec([server('fs', { pool: 'fs', package: pkg })]);
    expect(isFederatedToolName(app, 'app.fs.read_file')).toBe(true);
    expect(isFederatedToolName(app, 'app.memory.read_graph')).toBe(false);
    expect(isFederatedToolName(app, 'community.web.search')).toBe(true);
    expect(isFederatedToolName(app, 'core.kv.get')).toBe(false);
  });
});
