/**
 * The console's requests: the turn journal's records of every source
 * (src/turns/turn-journal.ts), filtered and paged, and one turn with its
 * ledger entries (read from the segment of its session's ledger that holds its turn number) and the
 * link to its trace where a trace UI is configured.
 *
 * - `GET api/requests?app&route&status&source&since&until&cursor&limit` -> `{turns: [...], next?, size}`
 *   (`status`: `404`, `5xx` or an error code; `since`/`until`: ISO times or epoch ms)
 * - `GET api/requests/<id>` -> `{turn, ledger: {exec, evidence} | null, traceUrl?}`
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { isTierName, LEDGER_KINDS, segmentsIn } from '../ledger/ledger-paths.js';
import { readTurnEntries } from '../ledger/turn-entries.js';
import { UhlpError } from '../shared/errors.js';
import { MAX_JOURNAL_PAGE, type TurnJournal } from '../turns/turn-journal.js';
import { TURN_SOURCES, type TurnJournalEntry, type TurnLedgerRef } from '../turns/turn-journal-entry.js';
import { CONSOLE_API, type ConsoleContext } from './console-routes.js';
import { integerParam, optionalChoice, optionalName, optionalTime } from './query-params.js';

/** A request id as the core takes one (X-Request-ID). */
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;
const STATUS = /^(\d{3}|[1-5]xx|[A-Z][A-Z0-9_]{1,127})$/;
const SESSION_ID = /^SES-[0-9A-Za-z-]{1,80}$/;

export function registerRequestsApi(app: FastifyInstance, context: ConsoleContext): void {
  const journal = (): TurnJournal => {
    if (context.journal === undefined) throw new UhlpError('UHLP_ROUTE_NOT_FOUND', 'this core keeps no turn journal (UHLP_TURN_JOURNAL_SIZE=0)');
    return context.journal;
  };

  app.get(`${CONSOLE_API}/requests`, async (request, reply) => {
    context.access.apiPrincipal(request);
    const query = request.query as Record<string, unknown>;
    const app = optionalName(query['app'], 'app');
    const route = boundedText(query['route'], 'route', 256);
    const status = boundedText(query['status'], 'status', 128);
    if (status !== undefined && !STATUS.test(status)) throw new UhlpError('UHLP_BAD_REQUEST', 'status must be a status (404), a class (5xx) or an error code', { field: 'status' });
    const source = optionalChoice(query['source'], 'source', TURN_SOURCES);
    const since = optionalTime(query['since'], 'since');
    const until = optionalTime(query['until'], 'until');
    const cursor = boundedText(query['cursor'], 'cursor', 160);
    const limit = integerParam(query['limit'], 'limit', 50, 1, MAX_JOURNAL_PAGE);
    if (context.journal === undefined) return reply.send({ turns: [], size: 0 });
    const page = await context.journal.list(
      {
        ...(app !== undefined ? { app } : {}),
        ...(route !== undefined ? { route } : {}),
        ...(status !== undefined ? { status } : {}),
        ...(source !== undefined ? { source } : {}),
        ...(since !== undefined ? { since } : {}),
        ...(until !== undefined ? { until } : {}),
      },
      limit,
      cursor,
    );
    return reply.send({ ...page, size: context.journal.size });
  });

  app.get<{ Params: { id: string } }>(`${CONSOLE_API}/requests/:id`, async (request, reply) => {
    context.access.apiPrincipal(request);
    const { id } = request.params;
    if (!REQUEST_ID.test(id)) throw new UhlpError('UHLP_BAD_REQUEST', 'id must be a request id', { field: 'id' });
    const turn = await journal().get(id);
    if (turn === undefined) throw new UhlpError('UHLP_ROUTE_NOT_FOUND', `no turn ${id} in the journal (it keeps the last ${journal().size} of each app on each core)`);
    const ledger = turn.ledger !== undefined && context.ledger !== undefined ? await turnEntries(context.ledger.dataDir, turn.ledger) : null;
    const traceUrl = traceUrlOf(context.config.traceUrlTemplate, turn);
    return reply.send({ turn, ledger, ...(traceUrl !== undefined ? { traceUrl } : {}) });
  });
}

/** The trace's address: the operator's template with the id put in (encoded: the id came with a request). */
export function traceUrlOf(template: string | undefined, turn: Pick<TurnJournalEntry, 'traceId'>): string | undefined {
  if (template === undefined || turn.traceId === undefined || turn.traceId === '') return undefined;
  return template.split('{traceId}').join(encodeURIComponent(turn.traceId));
}

/** The exec and evidence entries of one turn, from whichever segments of its session hold them; empty when none does (yet, or any more). */
async function turnEntries(dataDir: string, ref: TurnLedgerRef): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const kind of LEDGER_KINDS) out[kind] = [];
  if (!isTierName(ref.tier) || !SESSION_ID.test(ref.sessionId)) return out;
  const dir = path.join(dataDir, 'planes', ref.tier, 'sessions', ref.sessionId, 'ledger');
  const segments = segmentsIn(await readdir(dir).catch(() => []));
  for (const kind of LEDGER_KINDS) out[kind] = await readTurnEntries(dir, kind, segments[kind], ref.turnNumber);
  return out;
}

function boundedText(value: unknown, field: string, max: number): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || value.length > max) throw new UhlpError('UHLP_BAD_REQUEST', `${field} must be text of at most ${max} characters`, { field });
  return value;
}
