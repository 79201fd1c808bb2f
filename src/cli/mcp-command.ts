/**
 * `uhlp mcp token <appId> [--url <core URL>] [--ttl <seconds>]`: asks a core
 * started by `uhlp dev` for an MCP token of the app and prints exactly two
 * lines, `MCP_URL=<url>` and `MCP_TOKEN=<token>`, for the official MCP client
 * or the MCP inspector (bearer token in `Authorization`).
 */
import { loadOperatorClientConfig } from '../config.js';
import { UhlpError } from '../shared/errors.js';
import { DEV_MCP_TOKEN_PATH } from '../mcp/dev-token-route.js';
import type { CommandGroup, CommandSpec } from './command-spec.js';
import { parseCommandLine, printHelp, subcommandOf } from './command-line.js';
import { DATA_DIR_FLAG, OPERATOR_URL_FLAG } from './client-flags.js';
import { coreRefusal, coreTarget, fetchCore } from './core-target.js';
import { EXIT_OK } from './exit-codes.js';

const FLAGS = {
  url: OPERATOR_URL_FLAG,
  'data-dir': DATA_DIR_FLAG,
  ttl: { type: 'string', value: 'S', help: "The token's life, seconds (default: the core's)" },
} as const;

export const MCP_TOKEN_COMMAND: CommandSpec<typeof FLAGS> = {
  name: 'mcp token',
  summary: "Dev mode: prints MCP_URL=... and MCP_TOKEN=... for the app's tools, for an MCP client or the MCP inspector",
  usage: ['<appId> [flags]'],
  positionals: { min: 1, max: 1 },
  flags: FLAGS,
  examples: ['uhlp mcp token shop', 'uhlp mcp token shop --url http://127.0.0.1:9090 --ttl 600'],
  notes: ['Only a core started by uhlp dev mints tokens, for loopback clients (docs/mcp.md).'],
};

export const MCP_GROUP: CommandGroup = {
  name: 'mcp',
  summary: "The core's MCP server from outside: a token to list and call an app's tools (docs/mcp.md)",
  commands: [MCP_TOKEN_COMMAND],
};

export async function mcpCommand(argv: string[]): Promise<number> {
  const chosen = subcommandOf(MCP_GROUP, argv);
  if ('help' in chosen) return printHelp(chosen.help);
  const line = parseCommandLine(MCP_TOKEN_COMMAND, chosen.rest);
  if (line.help !== undefined) return printHelp(line.help);
  const { values, positionals } = line;
  const appId = positionals[0]!;
  const ttlSeconds = values.ttl === undefined ? undefined : Number(values.ttl);
  if (ttlSeconds !== undefined && !Number.isInteger(ttlSeconds)) {
    throw new UhlpError('UHLP_CONFIG_INVALID', `--ttl must be a whole number of seconds, got "${values.ttl}"`, { name: '--ttl', value: values.ttl });
  }
  const target = coreTarget(loadOperatorClientConfig(values));
  const { response, body: answer } = await fetchCore(target, DEV_MCP_TOKEN_PATH, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ appId, ...(ttlSeconds !== undefined ? { ttlSeconds } : {}) }),
  });
  const body = answer as Record<string, unknown> | undefined;
  if (!response.ok || typeof body?.['token'] !== 'string' || typeof body['mcp_url'] !== 'string') throw coreRefusal(response, body);
  process.stdout.write(`MCP_URL=${body['mcp_url']}\nMCP_TOKEN=${body['token']}\n`);
  return EXIT_OK;
}
