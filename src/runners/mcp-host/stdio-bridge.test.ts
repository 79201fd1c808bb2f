import { describe, expect, it } from 'vitest';
import { StdioBridge } from './stdio-bridge.js';

/** A server on the bridge's stdio: `answer` gets each request and writes what it likes. */
function serve(bridge: StdioBridge, answer: (request: { id: number; method: string; params: any }, write: (text: string) => void) => void): void {
  let buffer = '';
  bridge.stdin.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let nl = buffer.indexOf('\n'); nl !== -1; nl = buffer.indexOf('\n')) {
      const message = JSON.parse(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
      if (message.method !== undefined && message.id !== undefined) answer(message, (text) => bridge.stdout.write(text));
    }
  });
}

const result = (id: number | string, value: unknown): string => `${JSON.stringify({ jsonrpc: '2.0', id, result: value })}\n`;

describe('the stdio bridge of the mcp-host', () => {
  it('answers the call with its result, across chunks, and counts what else the server wrote', async () => {
    const bridge = new StdioBridge();
    serve(bridge, (request, write) => {
      write('not json\n');
      write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: {} })}\n`);
      write(result(request.id + 99, { content: [] }));
      const text = result(request.id, { content: [{ type: 'text', text: 'ok' }] });
      write(text.slice(0, 10));
      write(text.slice(10));
    });
    const answer = await bridge.call('tools/call', { name: 'x' }, 1000, 1024);
    expect(answer).toEqual({ result: { content: [{ type: 'text', text: 'ok' }] }, dropped: { notifications: 1, requests: 0, garbage: 2 } });
  });

  it('answers a request the server sends back with an error, and never passes it on', async () => {
    const bridge = new StdioBridge();
    const seen: unknown[] = [];
    let asked = 0;
    bridge.stdin.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        const message = JSON.parse(line);
        seen.push(message);
        if (message.method === 'tools/call') {
          asked = message.id;
          bridge.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', id: 'back', method: 'sampling/createMessage', params: {} })}\n`);
        } else if (message.id === 'back') bridge.stdout.write(result(asked, { content: [{ type: 'text', text: String(message.error.code) }] }));
      }
    });
    const answer = await bridge.call('tools/call', {}, 1000, 1024);
    expect(answer.result).toEqual({ content: [{ type: 'text', text: '-32601' }] });
    expect(answer.dropped.requests).toBe(1);
  });

  it.each([
    ['a silent server', () => undefined, 'UHLP_MCP_SERVER_TIMEOUT'],
    ['an answer over the limit', (request: { id: number }, write: (text: string) => void) => write(result(request.id, { content: [{ type: 'text', text: 'x'.repeat(5000) }] })), 'UHLP_MCP_SERVER_OUTPUT_TOO_LARGE'],
    ['a result that is no object', (request: { id: number }, write: (text: string) => void) => write(result(request.id, 'text')), 'UHLP_MCP_SERVER_PROTOCOL_ERROR'],
  ])('fails %s with its code', async (_label, answer, code) => {
    const bridge = new StdioBridge();
    serve(bridge, answer);
    expect((await bridge.call('tools/call', {}, 100, 1024)).failure?.code).toBe(code);
  });

  it('passes a JSON-RPC error on as the server gave it', async () => {
    const bridge = new StdioBridge();
    serve(bridge, (request, write) => write(`${JSON.stringify({ jsonrpc: '2.0', id: request.id, error: { code: -32602, message: 'bad' } })}\n`));
    expect((await bridge.call('tools/call', {}, 1000, 1024)).rpcError).toEqual({ code: -32602, message: 'bad' });
  });

  it('makes one call at a time', async () => {
    const bridge = new StdioBridge();
    const first = bridge.call('tools/list', {}, 50, 1024);
    await expect(bridge.call('tools/list', {}, 50, 1024)).rejects.toThrow(/one call at a time/);
    await first;
  });
});
