import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRawMcpServer, type RawMcpServer } from '../../../test/helpers/raw-mcp-server.js';
import { createHttpServer } from './http-server.js';

/** An outputSchema whose pattern backtracks exponentially, and an answer that makes it do so. */
const CATASTROPHIC = { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } };
const EVIL_ANSWER = `${'a'.repeat(28)}!`;

describe('a remote MCP server', () => {
  let remote: RawMcpServer;

  beforeAll(async () => {
    remote = await startRawMcpServer({
      tools: [{ name: 'evil', inputSchema: { type: 'object' }, outputSchema: CATASTROPHIC }],
      call: () => ({ content: [{ type: 'text', text: 'done' }], structuredContent: { s: EVIL_ANSWER } }),
    });
  });
  afterAll(async () => {
    await remote.close();
  });

  it("whose outputSchema pattern backtracks exponentially on its answer costs the core's event loop nothing measurable", async () => {
    const server = createHttpServer({ id: 'app.hostile', url: remote.url, timeoutMs: 10_000, maxOutputBytes: 65_536, allowPrivate: [remote.hostPort] });
    try {
      const signal = AbortSignal.timeout(10_000);
      expect((await server.listTools(signal)).map((tool) => tool.name)).toEqual(['evil']);
      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      const started = performance.now();
      const { result } = await server.callTool('evil', {}, signal);
      const elapsedMs = performance.now() - started;
      delay.disable();
      // The answer is passed on as the server sent it: its schema is neither compiled nor checked.
      expect(result['structuredContent']).toEqual({ s: EVIL_ANSWER });
      // Checked against the pattern, this answer holds the event loop for seconds (2^28 backtracking steps).
      expect(elapsedMs).toBeLessThan(1_000);
      expect(delay.max / 1e6).toBeLessThan(500);
    } finally {
      await server.close();
    }
  });
});
