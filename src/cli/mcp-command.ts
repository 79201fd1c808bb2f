/**
 * `uhlp mcp token <appId> [--url <core URL>] [--ttl <seconds>]`: asks a core
 * started by `uhlp dev` for an MCP token of the app and prints exactly two
 * lines, `MCP_URL=<url>` and `MCP_TOKEN=<token>`, for the official MCP client
 * or the MCP inspector (bearer token in `Authorization`).
 */
import { parseArgs } from 'node:util';
import { UhlpError } from '../shared/errors.js';
import { DEV_MCP_TOKEN_PATH } from '../mcp/dev-token-route.js';

export const MCP_USAGE = 'uhlp mcp token <appId> [--url <core URL>] [--ttl <seconds>]';

/** Where `uhlp dev` listens when given no flags. */
const DEFAULT_CORE_URL = 'http://127.0.0.1:8080';

export async function mcpCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { url: { type: 'string' }, ttl: { type: 'string' } },
  });
  if (positionals[0] !== 'token' || positionals.length !== 2) throw new UhlpError('UHLP_CONFIG_INVALID', `usage: ${MCP_USAGE}`);
  const appId = positionals[1]!;
  const base = values.url ?? DEFAULT_CORE_URL;
  let endpoint: URL;
  try {
    endpoint = new URL(DEV_MCP_TOKEN_PATH, base);
  } catch {
    throw new UhlpError('UHLP_CONFIG_INVALID', `--url must be the core's URL, got "${base}"`, { name: '--url', value: base });
  }
  const ttlSeconds = values.ttl === undefined ? undefined : Number(values.ttl);
  if (ttlSeconds !== undefined && !Number.isInteger(ttlSeconds)) {
    throw new UhlpError('UHLP_CONFIG_INVALID', `--ttl must be a whole number of seconds, got "${values.ttl}"`, { name: '--ttl', value: values.ttl });
  }

  let response: Response;
  try {
    response = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ appId, ...(ttlSeconds !== undefined ? { ttlSeconds } : {}) }),
    });
  } catch (error) {
    process.stderr.write(`uhlp: no core answers at ${base}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  const body = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  if (!response.ok || typeof body?.['token'] !== 'string' || typeof body['mcp_url'] !== 'string') {
    const code = typeof body?.['code'] === 'string' ? `${body['code']}: ` : '';
    const message = typeof body?.['message'] === 'string' ? body['message'] : `HTTP ${response.status}`;
    process.stderr.write(`uhlp: ${code}${message}\n`);
    return 1;
  }
  process.stdout.write(`MCP_URL=${body['mcp_url']}\nMCP_TOKEN=${body['token']}\n`);
  return 0;
}
