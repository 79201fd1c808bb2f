import { existsSync, mkdtempSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ExecuteRequest } from '../../contract/execute-contract.js';
import { Http1ResponseParser, type ParsedResponse } from '../../shared/http1/response-parser.js';
import { createJitExecutor } from '../jit/jit-executor.js';
import type { Executor } from './executor.js';
import { createRunnerServer, type RunnerServer } from './runner-server.js';
import type { ExecutionTools } from './tools-client.js';

let runner: RunnerServer;
let socketPath: string;

beforeEach(async () => {
  socketPath = path.join(mkdtempSync(path.join(os.tmpdir(), 'uhlp-rs-')), 'r.sock');
  runner = createRunnerServer({ executor: createJitExecutor({ definitionsRoot: mkdtempSync(path.join(os.tmpdir(), 'uhlp-rs-defs-')) }) });
  await new Promise<void>((resolve) => runner.server.listen(socketPath, resolve));
});
afterEach(async () => {
  await new Promise<void>((resolve) => runner.server.close(() => resolve()));
});

/** Writes `requests` in one go, then (with `end`) half-closes; resolves with every answer and whether the runner closed the connection. */
function exchange(requests: string, options: { answers: number; end?: boolean }): Promise<{ answers: ParsedResponse[]; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(socketPath);
    const answers: ParsedResponse[] = [];
    let parser = new Http1ResponseParser();
    let closed = false;
    const finish = (): void => {
      socket.destroy();
      resolve({ answers, closed });
    };
    socket.on('data', (chunk: Buffer) => {
      let rest: Buffer | undefined = chunk;
      // Answers are framed by Content-Length; split pipelined ones at their ends.
      while (rest !== undefined && rest.length > 0) {
        const text = rest.toString('latin1');
        const headEnd = text.indexOf('\r\n\r\n');
        const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? 0);
        const end = headEnd === -1 ? rest.length : Math.min(rest.length, headEnd + 4 + length);
        const answer = parser.push(rest.subarray(0, end));
        rest = rest.subarray(end);
        if (answer) {
          answers.push(answer);
          parser = new Http1ResponseParser();
        }
      }
      if (answers.length === options.answers) setTimeout(finish, 50);
    });
    socket.on('end', () => {
      closed = true;
      finish();
    });
    socket.on('error', reject);
    socket.write(requests, () => {
      if (options.end) socket.end();
    });
  });
}

const json = (answer: ParsedResponse): unknown => JSON.parse(answer.body.toString());

describe('runner server', () => {
  it('answers pipelined requests on one connection in order, and keeps it open', async () => {
    const { answers, closed } = await exchange('GET /healthz HTTP/1.1\r\nhost: r\r\n\r\nGET /nope HTTP/1.1\r\nhost: r\r\n\r\nPUT /execute HTTP/1.1\r\nhost: r\r\ncontent-length: 2\r\n\r\n{}', {
      answers: 3,
    });
    expect(answers.map((answer) => answer.status)).toEqual([200, 404, 405]);
    expect(json(answers[0]!)).toEqual({ status: 'ok', busy: false, running: 0 });
    expect(closed).toBe(false);
  });

  it('refuses an /execute without a request id, and echoes the one it was given', async () => {
    const { answers } = await exchange(
      'POST /execute HTTP/1.1\r\nhost: r\r\ncontent-length: 2\r\n\r\n{}POST /execute HTTP/1.1\r\nhost: r\r\nx-request-id: r-9\r\ncontent-length: 5\r\n\r\nnope!',
      { answers: 2 },
    );
    expect(answers.map((answer) => answer.status)).toEqual([400, 400]);
    expect(json(answers[0]!)).toMatchObject({ error: 'UHLP_EXECUTE_BAD_REQUEST', details: /X-Request-ID/ });
    expect(json(answers[1]!)).toMatchObject({ details: 'the body is not JSON' });
  });

  it('answers a request it cannot read with its status, then closes', async () => {
    const malformed = await exchange('GET /healthz HTTP/1.1\r\nhost: r\r\nbad header\r\n\r\nGET /healthz HTTP/1.1\r\nhost: r\r\n\r\n', { answers: 1 });
    expect(malformed.answers.map((answer) => answer.status)).toEqual([400]);
    expect(malformed.answers[0]!.close).toBe(true);
    expect(malformed.closed).toBe(true);
    const gzipped = await exchange('POST /execute HTTP/1.1\r\nhost: r\r\ntransfer-encoding: gzip\r\n\r\n', { answers: 1 });
    expect(gzipped.answers[0]!.status).toBe(501);
    expect(gzipped.closed).toBe(true);
    const noHost = await exchange('GET /healthz HTTP/1.1\r\n\r\n', { answers: 1 });
    expect(noHost.answers[0]!.status).toBe(400);
    expect(json(noHost.answers[0]!)).toMatchObject({ error: 'UHLP_EXECUTE_BAD_REQUEST', details: /host/ });
  });

  it('closes after answering when asked to, and answers a client that half-closed', async () => {
    const asked = await exchange('GET /healthz HTTP/1.1\r\nhost: r\r\nconnection: close\r\n\r\n', { answers: 1 });
    expect(asked.answers[0]).toMatchObject({ status: 200, close: true });
    expect(asked.closed).toBe(true);
    const halfClosed = await exchange('GET /healthz HTTP/1.1\r\nhost: r\r\n\r\n', { answers: 1, end: true });
    expect(halfClosed.answers[0]!.status).toBe(200);
    expect(halfClosed.closed).toBe(true);
  });
});

describe('warm-up', () => {
  it('answers GET /healthz 503 until its warm-up request is answered, then 200', async () => {
    const tcp = createRunnerServer({ executor: createJitExecutor({ definitionsRoot: mkdtempSync(path.join(os.tmpdir(), 'uhlp-rs-defs-')) }) });
    await new Promise<void>((resolve) => tcp.server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(tcp.server.address() as net.AddressInfo).port}`;
    // The warm-up's own request goes to a listener that holds it until closed.
    const held: net.Socket[] = [];
    const holder = net.createServer((socket) => void held.push(socket));
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    try {
      const warming = tcp.warmUp(`http://127.0.0.1:${(holder.address() as net.AddressInfo).port}`);
      expect((await fetch(`${url}/healthz`)).status).toBe(503);
      for (const socket of held) socket.destroy();
      holder.close();
      await warming;
      const health = await fetch(`${url}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: 'ok', running: 0 });
      // Against itself, it ends by itself.
      await tcp.warmUp(url);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
    } finally {
      await tcp.drain();
    }
  });

  it("has a pod's jit-runner run a script of its own the whole way first: sent along, kept at a revision no commit has, imported, called", async () => {
    const definitionsRoot = mkdtempSync(path.join(os.tmpdir(), 'uhlp-rs-defs-'));
    const jit = createJitExecutor({ definitionsRoot, definitionsViaMcp: true });
    const results: unknown[] = [];
    const executor: Executor = Object.assign(async (request: ExecuteRequest, tools: ExecutionTools) => {
      const result = await jit(request, tools);
      results.push(result);
      return result;
    }, { warmUpRequest: jit.warmUpRequest });
    const tcp = createRunnerServer({ executor });
    await new Promise<void>((resolve) => tcp.server.listen(0, '127.0.0.1', resolve));
    try {
      await tcp.warmUp(`http://127.0.0.1:${(tcp.server.address() as net.AddressInfo).port}`);
      expect(results).toEqual([{ resultType: 'generic', data: { warm: true }, metrics: { script_load_ms: expect.any(Number), timings: { run: { start_ms: expect.any(Number), duration_ms: expect.any(Number) }, script_load: { start_ms: expect.any(Number), duration_ms: expect.any(Number) } } } }]);
      expect(existsSync(path.join(definitionsRoot, '0'.repeat(40), 'warm-up.js'))).toBe(true);
    } finally {
      await tcp.drain();
    }
    // A runner reading a mounted revision keeps no cache: it warms its request path only.
    expect(createJitExecutor({ definitionsRoot }).warmUpRequest).toBeUndefined();
  });
});
