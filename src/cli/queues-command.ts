/**
 * `uhlp queues ls | dlq | redrive | token`: the delivery routes of a running
 * core (depth, oldest age, dead letters), its dead letters, moving them back,
 * and a publish token for `POST /_uhlp/queues/<app>/<name>`. The commands sign
 * their own admin token with the sources key (UHLP_SOURCES_KEY_FILE /
 * UHLP_SOURCES_KEY, else `<data-dir>/sources.key`): whoever can read the key
 * operates the queues, as the core does.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { loadOperatorClientConfig, loadSourcesKeyConfig } from '../config.js';
import { UhlpError } from '../shared/errors.js';
import { neutralText } from '../contract/error-stack.js';
import { SOURCES_KEY_FILE, loadSourcesKey, signToken } from '../sources/signed-token.js';
import { someFlags, type CommandGroup, type CommandSpec } from './command-spec.js';
import { parseCommandLine, printHelp, subcommandOf } from './command-line.js';
import { DATA_DIR_FLAG, JSON_FLAG, OPERATOR_URL_FLAG } from './client-flags.js';
import { coreRefusal, coreTarget, fetchCore } from './core-target.js';
import { EXIT_OK } from './exit-codes.js';

const FLAGS = {
  url: OPERATOR_URL_FLAG,
  'data-dir': { ...DATA_DIR_FLAG, help: `${DATA_DIR_FLAG.help}; its sources.key signs the commands' tokens unless UHLP_SOURCES_KEY_FILE or UHLP_SOURCES_KEY is set` },
  source: { type: 'string', value: 'queue|cron|callback|trigger', help: 'The kind of route named (default queue)' },
  limit: { type: 'string', value: 'N', help: 'How many dead letters (default 100 to list, 1000 to redrive; at most 10000)' },
  ttl: { type: 'string', value: 'S', help: 'Life of the publish token, seconds (default 0: no expiry)' },
  json: JSON_FLAG,
} as const;

type QueuesSpec = CommandSpec<typeof FLAGS>;
const ROUTE = { usage: ['<app> <name> [flags]'], positionals: { min: 2, max: 2 } } as const;
const CLIENT = someFlags(FLAGS, 'url', 'data-dir', 'json');
const DEAD_LETTERS = someFlags(FLAGS, 'url', 'data-dir', 'source', 'limit', 'json');

export const QUEUES_COMMANDS: readonly QueuesSpec[] = [
  {
    name: 'queues ls',
    summary: 'Depth, pending, retrying, oldest age and dead letters of every queue, cron, callback and trigger route',
    flags: CLIENT,
    examples: ['uhlp queues ls', 'uhlp queues ls --url http://127.0.0.1:9090 --json'],
  },
  {
    name: 'queues waiting',
    summary: 'The flow-control keys with events waiting: route (or component), kind, key, waiting and running events (docs/flow-control.md)',
    flags: CLIENT,
    examples: ['uhlp queues waiting', 'uhlp queues waiting --json'],
  },
  { name: 'queues dlq', summary: "A route's dead letters, oldest first", ...ROUTE, flags: DEAD_LETTERS, examples: ['uhlp queues dlq shop orders', 'uhlp queues dlq shop nightly --source cron --limit 10'] },
  { name: 'queues redrive', summary: "Moves a route's dead letters back onto it", ...ROUTE, flags: DEAD_LETTERS, examples: ['uhlp queues redrive shop orders'] },
  {
    name: 'queues token',
    summary: 'Prints a publish token for POST /_uhlp/queues/<app>/<name> (Authorization: Bearer)',
    ...ROUTE,
    flags: someFlags(FLAGS, 'data-dir', 'ttl'),
    examples: ['uhlp queues token shop orders --ttl 3600'],
  },
];

export const QUEUES_GROUP: CommandGroup = {
  name: 'queues',
  summary: 'The delivery routes of a running core: depth and age, dead letters, redrive, publish tokens (docs/sources.md)',
  commands: QUEUES_COMMANDS,
};

/** Life of the admin token a command signs for itself. */
const ADMIN_TOKEN_SECONDS = 300;

export async function queuesCommand(argv: string[]): Promise<number> {
  const chosen = subcommandOf(QUEUES_GROUP, argv);
  if ('help' in chosen) return printHelp(chosen.help);
  const line = parseCommandLine(chosen.spec as QueuesSpec, chosen.rest);
  if (line.help !== undefined) return printHelp(line.help);
  const { values, positionals } = line;
  const sub = chosen.spec.name.slice('queues '.length);
  const [app, name] = positionals;
  const client = loadOperatorClientConfig(values);
  const configured = loadSourcesKeyConfig();
  if (configured === undefined && !existsSync(path.join(client.dataDir, SOURCES_KEY_FILE))) {
    throw new UhlpError(
      'UHLP_CONFIG_INVALID',
      `no sources key: set UHLP_SOURCES_KEY_FILE, or --data-dir to a core's data directory (${path.join(client.dataDir, SOURCES_KEY_FILE)} does not exist)`,
      { name: '--data-dir' },
    );
  }
  const key = await loadSourcesKey(client.dataDir, configured ? Buffer.from(configured.secret()) : undefined);
  const now = Math.floor(Date.now() / 1000);

  if (sub === 'token') {
    const ttl = values.ttl === undefined ? 0 : Number(values.ttl);
    if (!Number.isInteger(ttl) || ttl < 0) throw new UhlpError('UHLP_CONFIG_INVALID', `--ttl must be whole seconds (0: no expiry), got "${values.ttl}"`, { name: '--ttl' });
    process.stdout.write(`${signToken(key, { purpose: 'queue-publish', app: app!, name: name!, expiresAt: ttl === 0 ? 0 : now + ttl })}\n`);
    return EXIT_OK;
  }

  const target = coreTarget(client);
  const admin = signToken(key, { purpose: 'queue-admin', app: '*', name: '*', expiresAt: now + ADMIN_TOKEN_SECONDS });
  const query = new URLSearchParams();
  if (values.source !== undefined) query.set('source', values.source);
  if (values.limit !== undefined) query.set('limit', values.limit);
  const where =
    sub === 'ls'
      ? '/_uhlp/queues'
      : sub === 'waiting'
        ? '/_uhlp/queues/waiting'
        : `/_uhlp/queues/${encodeURIComponent(app!)}/${encodeURIComponent(name!)}/${sub === 'dlq' ? 'dead' : 'redrive'}${query.size > 0 ? `?${query}` : ''}`;
  const { response, body: answer } = await fetchCore(target, where, { method: sub === 'redrive' ? 'POST' : 'GET', headers: { authorization: `Bearer ${admin}` } });
  const body = answer as Record<string, any> | undefined;
  if (!response.ok || body === undefined) throw coreRefusal(response, body);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(body, null, 2)}\n`);
    return EXIT_OK;
  }
  if (sub === 'ls') {
    const rows = (body['queues'] as Array<Record<string, any>>).map((q) => [`${q['app']}/${q['name']}`, q['source'], q['depth'], q['pending'], q['retrying'], (q['oldestAgeMs'] / 1000).toFixed(1), q['deadLetters']]);
    printTable(['ROUTE', 'SOURCE', 'DEPTH', 'PENDING', 'RETRYING', 'OLDEST_S', 'DEAD'], rows);
  } else if (sub === 'waiting') {
    const rows = (body['gates'] as Array<Record<string, any>>).map((g) => [g['app'], g['scope'], g['kind'], JSON.stringify(g['key']), g['waiting'], g['running']]);
    printTable(['APP', 'ROUTE', 'KIND', 'KEY', 'WAITING', 'RUNNING'], rows);
  } else if (sub === 'dlq') {
    // The last error's message, cut to a table cell; its whole text and stack are in --json.
    const rows = (body['deadLetters'] as Array<Record<string, any>>).map((d) => [
      d['id'],
      d['invocationId'],
      d['attempts'],
      d['reason'],
      d['error'] ?? '',
      typeof d['errorMessage'] === 'string' ? neutralText(d['errorMessage'], 60) : '',
      new Date(d['deadAt']).toISOString(),
      JSON.stringify(d['payload']).slice(0, 60),
    ]);
    printTable(['ID', 'INVOCATION', 'ATTEMPTS', 'REASON', 'ERROR', 'MESSAGE', 'DEAD_AT', 'PAYLOAD'], rows);
  } else {
    process.stdout.write(`redriven ${body['redriven']} message(s) to ${app}/${name}\n`);
  }
  return EXIT_OK;
}

function printTable(head: string[], rows: unknown[][]): void {
  const cells = [head, ...rows.map((row) => row.map((cell) => String(cell)))];
  const widths = head.map((_, i) => Math.max(...cells.map((row) => String(row[i]).length)));
  for (const row of cells) process.stdout.write(`${row.map((cell, i) => String(cell).padEnd(widths[i]!)).join('  ').trimEnd()}\n`);
}
