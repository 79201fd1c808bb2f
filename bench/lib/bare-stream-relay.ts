/**
 * The floor of a workflow's first streamed byte on this machine: the same hops
 * between the same kinds of processes, with nothing of uhlp in them. A front
 * process (the core's place) takes `POST /streamed` on the core's HTTP/1.1
 * server and answers server-sent events; it asks a brain process (the
 * orchestrator's place, its child) on a Unix socket, which at once asks the
 * front back for a completion on the front's own Unix socket; the front sends
 * the streamed completion to the OpenAI-compatible server (undici, as the
 * core's provider) and writes the provider's first piece to the client as a
 * NODE_STREAM event; the rest ends the answer. Each hop is one kept-alive
 * HTTP/1.1 exchange, as in uhlp: client -> front -> brain -> front -> provider
 * -> front -> client. No routing, run records, tokens, templates, MCP,
 * checkpoints, ledger or metrics.
 *
 * `GET /greet/<id>` makes the same hops for an LLM component's plain turn (the
 * floor of its CPU per turn, bench/llm-dispatch.ts): the brain asks the front
 * back for one completion, not streamed, as the orchestrator asks the core
 * through `core.llm.generate`, and the front answers the client with the JSON
 * the brain answered.
 *
 *   tsx bench/lib/bare-stream-relay.ts <provider base URL>   (prints {"port": N} once listening)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { Http1Server } from '../../src/shared/http1/http1-server.js';
import { startBareChild, type BareChild } from './bare-child.js';

const LIMITS = { maxHeadBytes: 16 * 1024, maxBodyBytes: 1024 * 1024 };
const loader = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;

/** Starts the front (and through it the brain) as child processes, in front of `baseUrl`; the pid is the front's, the brain its child. */
export function startBareStreamRelay(baseUrl: string): Promise<BareChild> {
  return startBareChild(import.meta.url, ['front', baseUrl], 'the bare stream relay');
}

/** Pieces pushed by one side and read as a stream by the server. */
class Pieces {
  private readonly queued: string[] = [];
  private ended = false;
  private wake: (() => void) | undefined;

  push(piece: string): void {
    this.queued.push(piece);
    this.wake?.();
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  async *chunks(): AsyncGenerator<string> {
    for (;;) {
      if (this.queued.length > 0) {
        yield this.queued.splice(0).join('');
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}

async function front(baseUrl: string): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-bare-stream-'));
  const frontSocket = path.join(dir, 'front.sock');
  const brainSocket = path.join(dir, 'brain.sock');
  const endpoint = `${baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const streams = new Map<string, Pieces>();
  let next = 0;

  // The brain's calls back: one streamed completion, its first piece to the client at once.
  const back = new Http1Server({
    limits: LIMITS,
    onBadRequest: (error) => ({ status: error.status }),
    onRequest: (req, respond) => {
      const { id, greet } = JSON.parse(req.body.toString()) as { id: string; greet?: string };
      if (greet !== undefined) {
        // A plain turn: one completion, its JSON read whole, as the core's provider reads it.
        const plain = JSON.stringify({ model: 'small', messages: [{ role: 'user', content: `Say hello to ${greet}.` }], max_tokens: 32 });
        request(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: plain })
          .then(async (answer) => {
            const completion = (await answer.body.json()) as { choices: Array<{ message: { content: string } }> };
            respond({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: completion.choices[0]!.message.content }) });
          })
          .catch(() => respond({ status: 502 }));
        return;
      }
      const pieces = streams.get(id)!;
      const body = JSON.stringify({ model: 'small', stream: true, messages: [{ role: 'user', content: 'Say something.' }] });
      request(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body })
        .then(async (answer) => {
          let text = '';
          for await (const chunk of answer.body) {
            if (text === '') pieces.push(`event: NODE_STREAM\ndata: ${JSON.stringify({ stream_id: 'default', chunk: String(chunk).slice(0, 64) })}\n\n`);
            text += String(chunk);
          }
          respond({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ bytes: text.length }) });
        })
        .catch(() => respond({ status: 502 }));
    },
  });
  await back.listen({ path: frontSocket });

  const brain = spawn(process.execPath, ['--import', loader, fileURLToPath(import.meta.url), 'brain', brainSocket, frontSocket], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    brain.stdout!.once('data', () => resolve());
    brain.once('exit', (code) => reject(new Error(`the bare brain exited with ${code}`)));
  });
  const toBrain = new Agent({ connect: { socketPath: brainSocket } });

  const server = new Http1Server({
    limits: LIMITS,
    onBadRequest: (error) => ({ status: error.status }),
    onRequest: (req, respond) => {
      const id = String(next++);
      if (req.path.startsWith('/greet/')) {
        request('http://brain/execute', { method: 'POST', dispatcher: toBrain, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, greet: req.path.slice('/greet/'.length) }) })
          .then(async (answer) => respond({ status: answer.statusCode, headers: { 'content-type': 'application/json' }, body: await answer.body.text() }))
          .catch(() => respond({ status: 502 }));
        return;
      }
      const pieces = new Pieces();
      streams.set(id, pieces);
      respond({ status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' }, stream: { chunks: pieces.chunks() } });
      request('http://brain/execute', { method: 'POST', dispatcher: toBrain, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id }) })
        .then(async (answer) => {
          const result = await answer.body.text();
          pieces.push(`event: RESULT\ndata: ${result}\n\n`);
        })
        .catch(() => pieces.push('event: RESULT\ndata: {"status":502}\n\n'))
        .finally(() => {
          streams.delete(id);
          pieces.end();
        });
    },
  });
  const address = (await server.listen({ host: '127.0.0.1', port: 0 })) as AddressInfo;
  process.on('SIGTERM', () => {
    brain.kill('SIGTERM');
    process.exit(0);
  });
  process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);
}

/** The orchestrator's place: each execution asks the front for a completion at once and answers what it got. */
async function brain(listenSocket: string, frontSocket: string): Promise<void> {
  const toFront = new Agent({ connect: { socketPath: frontSocket } });
  const server = new Http1Server({
    limits: LIMITS,
    onBadRequest: (error) => ({ status: error.status }),
    onRequest: (req, respond) => {
      request('http://front/generate', { method: 'POST', dispatcher: toFront, headers: { 'content-type': 'application/json' }, body: req.body })
        .then(async (answer) => respond({ status: 200, headers: { 'content-type': 'application/json' }, body: await answer.body.text() }))
        .catch(() => respond({ status: 502 }));
    },
  });
  await server.listen({ path: listenSocket });
  process.on('SIGTERM', () => process.exit(0));
  process.stdout.write('ready\n');
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv[2] === 'front') await front(process.argv[3]!);
  else await brain(process.argv[3]!, process.argv[4]!);
}
