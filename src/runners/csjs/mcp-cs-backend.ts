/**
 * The `cs` backend of the csjs runner: each checked call becomes a core MCP
 * tool call with the execution's token, so the app's capabilities are checked
 * again by the core (kv prefixes and ops, web hosts, codeq topics), the SSRF
 * guard of the std-body host resolves and vets every address, and every call
 * lands in the turn's evidence. A fetch carries the manifest's
 * `http.allowHosts`, which the core applies, narrowing the app's own list, to
 * every redirect hop as `uhlp fn run` does. A web refusal of the guard (a
 * private address behind an allowed name, a redirect to a host outside either
 * list) reaches the bundle with the guard's own code.
 */
import { UhlpError } from '../../shared/errors.js';
import type { CsBackend, CsFetchRequest, CsFetchResponse } from './cs-host.js';
import { ToolCallError, type ToolsClient } from '../kit/tools-client.js';

export function mcpCsBackend(tools: ToolsClient): CsBackend {
  return {
    async kvGet(key) {
      return (await tools.call('core.kv.get', { key }))['value'] ?? null;
    },
    async kvSet(key, value, ttlSeconds) {
      await tools.call('core.kv.set', { key, value, ...(ttlSeconds !== undefined ? { ttlSeconds } : {}) });
    },
    async kvDel(key) {
      return (await tools.call('core.kv.del', { key }))['deleted'] === true;
    },
    async publish(topic, payload) {
      const answer = await tools.call('core.codeq.publish', { topic, payload });
      return typeof answer['messageId'] === 'string' ? { messageId: answer['messageId'] } : {};
    },
    fetch: (request) => fetchThroughCore(tools, request),
  };
}

async function fetchThroughCore(tools: ToolsClient, request: CsFetchRequest): Promise<CsFetchResponse> {
  let answer: Record<string, unknown>;
  try {
    answer = await tools.call('tool.web.fetch', {
      url: request.url,
      method: request.method,
      headers: request.headers,
      ...(request.body !== undefined ? { body: request.body } : {}),
      timeoutMs: request.timeoutMs,
      // The manifest's list goes with the call: the core applies it, within the app's, to every redirect hop.
      allowHosts: request.allowHosts,
    });
  } catch (error) {
    const refusal = (error as ToolCallError).details as { refusal?: unknown } | undefined;
    if (error instanceof ToolCallError && typeof refusal?.refusal === 'string' && refusal.refusal.startsWith('UHLP_WEB_')) {
      throw new ToolCallError(refusal.refusal, error.message, error.status, error.details);
    }
    throw error;
  }
  if (answer['outcome'] !== 'applied') {
    const code = typeof answer['code'] === 'string' ? answer['code'] : 'UHLP_WEB_NETWORK_ERROR';
    throw new UhlpError(code.startsWith('UHLP_WEB_') ? (code as 'UHLP_WEB_NETWORK_ERROR') : 'UHLP_WEB_NETWORK_ERROR', typeof answer['message'] === 'string' ? answer['message'] : 'the fetch failed', {
      reason: answer['reason'],
    });
  }
  const body = typeof answer['body'] === 'string' ? answer['body'] : '';
  const headers = (typeof answer['headers'] === 'object' && answer['headers'] !== null ? answer['headers'] : {}) as Record<string, string>;
  return {
    status: Number(answer['status']),
    headers,
    body: answer['bodyEncoding'] === 'base64' ? body : Buffer.from(body, 'utf8').toString('base64'),
    isBase64Encoded: true,
  };
}
