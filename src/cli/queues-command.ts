/**
 * `uhlp queues ls | dlq | redrive | token`: the delivery routes of a running
 * core (depth, oldest age, dead letters), its dead letters, moving them back,
 * and a publish token for `POST /_uhlp/queues/<app>/<name>`. The commands sign
 * their own admin token with the sources key (UHLP_SOURCES_KEY_FILE /
 * UHLP_SOURCES_KEY, else `<data-dir>/sources.key`): whoever can read the key
 * operates the queues, as the core does.
 */
import { parseArgs } from 'node:util';
import path from 'node:path';
import { loadSourcesKeyConfig } from '../config.js';
import { UhlpError } from '../shared/errors.js';
import { readRuntimeState } from './runtime-state.js';
import { SOURCES_KEY_FILE, loadSourcesKey, signToken } from '../sources/signed-token.js';
import { existsSync } from 'node:fs';

export const QUEUES_USAGE =
  'uhlp queues ls|dlq <app> <name>|redrive <app> <name>|token <app> <name> [--url U] [--data-dir D] [--source queue|cron|callback|trigger] [--limit N] [--ttl S] [--json]';

/** Life of the admin token a command signs for itself. */
const ADMIN_TOKEN_SECONDS = 300;

export async function queuesCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      'data-dir': { type: 'string' },
      source: { type: 'string' },
      limit: { type: 'string' },
      ttl: { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  const [sub, app, name] = positionals;
  const usage = (): never => {
    throw new UhlpError('UHLP_CONFIG_INVALID', `usage: ${QUEUES_USAGE}`);
  };
  if (sub === undefined || !['ls', 'dlq', 'redrive', 'token'].includes(sub)) usage();
  if (sub !== 'ls' && (app === undefined || name === undefined)) usage();
  const dataDir = path.resolve(values['data-dir'] ?? '.uhlp');
  const configured = loadSourcesKeyConfig();
  if (configured === undefined && !existsSync(path.join(dataDir, SOURCES_KEY_FILE))) {
    throw new UhlpError('UHLP_CONFIG_INVALID', `no sources key: set UHLP_SOURCES_KEY_FILE, or --data-dir to a core's data directory (${path.join(dataDir, SOURCES_KEY_FILE)} does not exist)`, {
      name: '--data-dir',
    });
  }
  const key = await loadSourcesKey(dataDir, configured ? Buffer.from(configured.secret()) : undefined);
  const now = Math.floor(Date.now() / 1000);

  if (sub === 'token') {
    const ttl = values.ttl === undefined ? 0 : Number(values.ttl);
    if (!Number.isInteger(ttl) || ttl < 0) throw new UhlpError('UHLP_CONFIG_INVALID', `--ttl must be whole seconds (0: no expiry), got "${values.ttl}"`, { name: '--ttl' });
    process.stdout.write(`${signToken(key, { purpose: 'queue-publish', app: app!, name: name!, expiresAt: ttl === 0 ? 0 : now + ttl })}\n`);
    return 0;
  }

  const base = values.url ?? readRuntimeState(dataDir)?.url ?? 'http://127.0.0.1:8080';
  const admin = signToken(key, { purpose: 'queue-admin', app: '*', name: '*', expiresAt: now + ADMIN_TOKEN_SECONDS });
  const query = new URLSearchParams();
  if (values.source !== undefined) query.set('source', values.source);
  if (values.limit !== undefined) query.set('limit', values.limit);
  const target =
    sub === 'ls'
      ? '/_uhlp/queues'
      : `/_uhlp/queues/${encodeURIComponent(app!)}/${encodeURIComponent(name!)}/${sub === 'dlq' ? 'dead' : 'redrive'}${query.size > 0 ? `?${query}` : ''}`;
  let response: Response;
  try {
    response = await fetch(new URL(target, base), { method: sub === 'redrive' ? 'POST' : 'GET', headers: { authorization: `Bearer ${admin}` } });
  } catch (error) {
    process.stderr.write(`uhlp: no core answers at ${base}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  const body = (await response.json().catch(() => undefined)) as Record<string, any> | undefined;
  if (!response.ok || body === undefined) {
    process.stderr.write(`uhlp: ${body?.['code'] ? `${body['code']}: ` : ''}${body?.['message'] ?? `HTTP ${response.status}`}\n`);
    return 1;
  }
  if (values.json) {
    process.stdout.write(`${JSON.stringify(body, null, 2)}\n`);
    return 0;
  }
  if (sub === 'ls') {
    const rows = (body['queues'] as Array<Record<string, any>>).map((q) => [`${q['app']}/${q['name']}`, q['source'], q['depth'], q['pending'], q['retrying'], (q['oldestAgeMs'] / 1000).toFixed(1), q['deadLetters']]);
    printTable(['ROUTE', 'SOURCE', 'DEPTH', 'PENDING', 'RETRYING', 'OLDEST_S', 'DEAD'], rows);
  } else if (sub === 'dlq') {
    const rows = (body['deadLetters'] as Array<Record<string, any>>).map((d) => [d['id'], d['invocationId'], d['attempts'], d['reason'], d['error'] ?? '', new Date(d['deadAt']).toISOString(), JSON.stringify(d['payload']).slice(0, 60)]);
    printTable(['ID', 'INVOCATION', 'ATTEMPTS', 'REASON', 'ERROR', 'DEAD_AT', 'PAYLOAD'], rows);
  } else {
    process.stdout.write(`redriven ${body['redriven']} message(s) to ${app}/${name}\n`);
  }
  return 0;
}

function printTable(head: string[], rows: unknown[][]): void {
  const cells = [head, ...rows.map((row) => row.map((cell) => String(cell)))];
  const widths = head.map((_, i) => Math.max(...cells.map((row) => String(row[i]).length)));
  for (const row of cells) process.stdout.write(`${row.map((cell, i) => String(cell).padEnd(widths[i]!)).join('  ').trimEnd()}\n`);
}
