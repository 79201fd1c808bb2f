/**
 * The floor of an LLM turn on this machine: a process of its own that takes
 * `GET /greet/:name` on the core's HTTP/1.1 server (src/shared/http1), sends the
 * completion the LLM component sends to the OpenAI-compatible server with the
 * same client the core's provider uses (undici, kept alive), and answers the
 * model's text; nothing else: no routing, sandbox, template, MCP, tokens,
 * budget, ledger or metrics. Its CPU per request, beside the core's and the
 * orchestrator's, shows how much of an LLM turn's cost is uhlp's.
 *
 *   tsx bench/lib/bare-llm-relay.ts <provider base URL>   (prints {"port": N} once listening)
 */
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { Http1Server } from '../../src/shared/http1/http1-server.js';
import { startBareChild, type BareChild } from './bare-child.js';

/** Starts the relay as a child process (so its CPU is its own), in front of `baseUrl`. */
export function startBareLlmRelay(baseUrl: string): Promise<BareChild> {
  return startBareChild(import.meta.url, [baseUrl], 'the bare LLM relay');
}

async function serve(baseUrl: string): Promise<void> {
  const endpoint = `${baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const server = new Http1Server({
    limits: { maxHeadBytes: 16 * 1024, maxBodyBytes: 1024 * 1024 },
    onBadRequest: (error) => ({ status: error.status }),
    onRequest: (req, respond) => {
      const name = decodeURIComponent(req.path.slice(req.path.lastIndexOf('/') + 1));
      const body = JSON.stringify({ model: 'small', messages: [{ role: 'user', content: `Say hello to ${name}.` }], max_tokens: 32 });
      request(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body })
        .then(async (answer) => {
          const completion = (await answer.body.json()) as { choices: Array<{ message: { content: string } }> };
          respond({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(completion.choices[0]!.message.content) });
        })
        .catch(() => respond({ status: 502 }));
    },
  });
  const address = (await server.listen({ host: '127.0.0.1', port: 0 })) as AddressInfo;
  process.on('SIGTERM', () => process.exit(0));
  process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) await serve(process.argv[2]!);
