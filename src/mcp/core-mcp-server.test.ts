import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/helpers/wait-for.js';
import { createScriptedProvider } from '../llm/scripted-provider.js';
import { silentLogger } from '../logger.js';
import { createMetrics } from '../metrics.js';
import { MemoryRuntimeStore } from '../state/memory-runtime-store.js';
import { createCoreMcpServer } from './core-mcp-server.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-mcp-server-'));
const store = new MemoryRuntimeStore();
const mcp = createCoreMcpServer({
  kv: store.kv,
  llmState: store.llm,
  llm: createScriptedProvider({ entries: [] }),
  revisionsRoot: path.join(root, 'revisions'),
  scratchRoot: path.join(root, 'scratch'),
  metrics: createMetrics({ defaultMetrics: false }),
  logger: silentLogger(),
});
afterAll(async () => {
  await mcp.close();
  await store.close();
  rmSync(root, { recursive: true, force: true });
});

const binding = { appId: 'a', componentId: 'c', requestId: 'r', revision: 'abc1234', capabilities: {}, configuration: {} };

describe('execution scratch directories', () => {
  it('gives each execution its own directory, once, and removes it when the execution ends', async () => {
    const first = mcp.tokens.resolve(mcp.beginExecution(binding, 60_000));
    const secondToken = mcp.beginExecution(binding, 60_000);
    const second = mcp.tokens.resolve(secondToken);
    const dir = await mcp.services.scratchDir(first);
    expect(await mcp.services.scratchDir(first)).toBe(dir);
    const other = await mcp.services.scratchDir(second);
    expect(other).not.toBe(dir);
    expect(path.dirname(dir)).toBe(path.join(root, 'scratch'));
    expect(existsSync(other)).toBe(true);

    mcp.endExecution(secondToken);
    await waitFor(() => !existsSync(other), { what: 'the other scratch directory to be removed' });
    expect(existsSync(dir)).toBe(true);
    // A call that is still running when its execution ends gets no new directory.
    await expect(mcp.services.scratchDir(second)).rejects.toMatchObject({ code: 'UHLP_MCP_UNAUTHORIZED' });
  });
});
