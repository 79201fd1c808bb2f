/**
 * The stdio of an MCP server that runs in this process: what it reads as stdin
 * is what the host writes, and what it writes as stdout comes here, line by
 * line, instead of to the real descriptor. The server runs in the sandbox's one
 * process (the sandbox lets nothing fork), so its stdio is replaced before its
 * module loads.
 *
 * The bridge makes one call at a time and reads only the answer to it: a line
 * longer than the call's output limit fails the call; notifications, requests
 * the server sends back (sampling, roots, elicitation: answered with an error,
 * the core never sees them) and lines that are not JSON-RPC are counted and
 * dropped.
 */
import { PassThrough, Writable } from 'node:stream';
import type { McpHostAnswer, McpHostFailure } from '../../contract/mcp-host-wire.js';

interface Waiting {
  readonly id: number;
  readonly maxOutputBytes: number;
  settle(answer: Omit<McpHostAnswer, 'dropped'>): void;
}

/** Largest line read while no call waits (a server's chatter between calls), bytes. */
const IDLE_LINE_LIMIT = 64 * 1024;

export class StdioBridge {
  /** What the server reads as its stdin. */
  readonly stdin = new PassThrough();
  /** What the server writes as its stdout. */
  readonly stdout: Writable;
  private nextId = 1;
  private waiting: Waiting | undefined;
  private line: Buffer[] = [];
  private lineBytes = 0;
  /** The current line is over the limit: skipped up to its newline. */
  private skipping = false;
  private dropped = { notifications: 0, requests: 0, garbage: 0 };

  constructor() {
    this.stdout = new Writable({
      write: (chunk: Buffer | string, _encoding, callback) => {
        this.take(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
        callback();
      },
    });
  }

  /** Sends a notification to the server (`notifications/initialized`, `notifications/cancelled`). */
  notify(method: string, params?: Record<string, unknown>): void {
    this.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method, ...(params !== undefined ? { params } : {}) })}\n`);
  }

  /** One request to the server; resolves with its answer, or the reason there is none. */
  call(method: string, params: Record<string, unknown>, timeoutMs: number, maxOutputBytes: number): Promise<McpHostAnswer> {
    if (this.waiting !== undefined) return Promise.reject(new Error('the MCP host makes one call at a time'));
    const id = this.nextId++;
    this.dropped = { notifications: 0, requests: 0, garbage: 0 };
    return new Promise<McpHostAnswer>((resolve) => {
      const timer = setTimeout(() => {
        this.notify('notifications/cancelled', { requestId: id, reason: 'timeout' });
        finish({ failure: failure('UHLP_MCP_SERVER_TIMEOUT', `the server did not answer ${method} within ${timeoutMs} ms`) });
      }, timeoutMs);
      const finish = (answer: Omit<McpHostAnswer, 'dropped'>): void => {
        if (this.waiting?.id !== id) return;
        clearTimeout(timer);
        this.waiting = undefined;
        resolve({ ...answer, dropped: { ...this.dropped } });
      };
      this.waiting = { id, maxOutputBytes, settle: finish };
      this.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }

  private take(chunk: Buffer): void {
    let start = 0;
    for (let newline = chunk.indexOf(10, start); newline !== -1; newline = chunk.indexOf(10, start)) {
      this.append(chunk.subarray(start, newline));
      if (!this.skipping) this.handle(Buffer.concat(this.line, this.lineBytes).toString('utf8'));
      this.line = [];
      this.lineBytes = 0;
      this.skipping = false;
      start = newline + 1;
    }
    this.append(chunk.subarray(start));
  }

  private append(piece: Buffer): void {
    if (this.skipping || piece.length === 0) return;
    const limit = this.waiting?.maxOutputBytes ?? IDLE_LINE_LIMIT;
    if (this.lineBytes + piece.length > limit) {
      // Nothing of an oversized line is kept: whatever it answers, the call fails.
      this.skipping = true;
      this.line = [];
      this.lineBytes = 0;
      if (this.waiting !== undefined) {
        this.waiting.settle({ failure: failure('UHLP_MCP_SERVER_OUTPUT_TOO_LARGE', `the server's answer is over ${limit} bytes`) });
      } else this.dropped.garbage += 1;
      return;
    }
    this.line.push(Buffer.from(piece));
    this.lineBytes += piece.length;
  }

  private handle(text: string): void {
    if (text.trim() === '') return;
    let message: Record<string, unknown>;
    try {
      const parsed = JSON.parse(text) as unknown;
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      message = parsed as Record<string, unknown>;
    } catch {
      this.dropped.garbage += 1;
      return;
    }
    const hasId = typeof message['id'] === 'number' || typeof message['id'] === 'string';
    if (typeof message['method'] === 'string') {
      if (!hasId) {
        this.dropped.notifications += 1;
        return;
      }
      // The server asks the client something: this host offers nothing, and says so.
      this.dropped.requests += 1;
      this.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: message['id'], error: { code: -32601, message: 'this client offers no sampling, roots or elicitation' } })}\n`);
      return;
    }
    const waiting = this.waiting;
    if (!hasId || waiting === undefined || message['id'] !== waiting.id) {
      this.dropped.garbage += 1;
      return;
    }
    const error = message['error'] as { code?: unknown; message?: unknown } | undefined;
    if (error !== undefined) {
      waiting.settle({ rpcError: { code: typeof error.code === 'number' ? error.code : -32603, message: String(error.message ?? 'error').slice(0, 1000) } });
      return;
    }
    const result = message['result'];
    if (typeof result !== 'object' || result === null || Array.isArray(result)) {
      waiting.settle({ failure: failure('UHLP_MCP_SERVER_PROTOCOL_ERROR', 'the server answered without a result object') });
      return;
    }
    waiting.settle({ result: result as Record<string, unknown> });
  }
}

function failure(code: McpHostFailure, message: string): { code: McpHostFailure; message: string } {
  return { code, message };
}
