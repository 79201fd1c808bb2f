/**
 * The console's ledger: the verification status (what `uhlp ledger verify`
 * reports, run in the core with the core's own key, one at a time, the last
 * report kept), the sessions whose ledgers the data directory holds, and one
 * session's exec and evidence entries (the newest MAX_ENTRIES of each).
 *
 * - `GET  api/ledger` -> `{enabled, verifying, last?}`
 * - `POST api/ledger/verify` -> the report (problems, warnings, gaps, torn tails, counts)
 * - `GET  api/ledger/sessions?app&limit` -> `{sessions: [{tier, id, app, ambient, startedAt, modifiedAt}]}`
 * - `GET  api/ledger/sessions/<tier>/<session>` -> `{exec: [...], evidence: [...], truncated}`
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { ledgerKeyring } from '../ledger/ledger-key.js';
import { isTierName, LEDGER_KINDS, segmentFileName, segmentsIn } from '../ledger/ledger-paths.js';
import { readSessionMeta } from '../ledger/ledger-session-meta.js';
import { parseLedgerLine, readLedgerTail } from '../ledger/ledger-tail.js';
import { verifyLedgers, type VerifyLedgersReport } from '../ledger/ledger-verify.js';
import { UhlpError } from '../shared/errors.js';
import { CONSOLE_API, type ConsoleContext } from './console-routes.js';
import { integerParam, optionalName } from './query-params.js';

/** Entries of each ledger shown for a session (the newest). */
const MAX_ENTRIES = 200;
/** Problems and warnings a report carries to the page. */
const MAX_LISTED = 50;
const SESSION_ID = /^SES-[0-9A-Za-z-]{1,80}$/;

interface LastReport {
  readonly at: string;
  readonly ok: boolean;
  readonly durationMs: number;
  readonly report: Omit<VerifyLedgersReport, 'problems' | 'warnings'> & { problems: unknown[]; warnings: unknown[]; problemCount: number; warningCount: number };
}

export function registerLedgerApi(app: FastifyInstance, context: ConsoleContext): void {
  let last: LastReport | undefined;
  let running: Promise<LastReport> | undefined;

  const ledger = (): NonNullable<ConsoleContext['ledger']> => {
    if (context.ledger === undefined) throw new UhlpError('UHLP_ROUTE_NOT_FOUND', 'this core keeps no turn ledger (UHLP_LEDGER=off)');
    return context.ledger;
  };

  app.get(`${CONSOLE_API}/ledger`, async (request, reply) => {
    context.access.apiPrincipal(request);
    return reply.send({ enabled: context.ledger !== undefined, verifying: running !== undefined, ...(last !== undefined ? { last } : {}) });
  });

  app.post(`${CONSOLE_API}/ledger/verify`, async (request, reply) => {
    context.access.apiPrincipal(request);
    const { dataDir, key } = ledger();
    // One verification at a time: a second click waits for the one under way.
    running ??= (async () => {
      const started = Date.now();
      try {
        const report = await verifyLedgers(dataDir, { ...(key !== undefined ? { keys: ledgerKeyring([key]) } : {}) });
        last = {
          at: new Date().toISOString(),
          ok: report.problems.length === 0,
          durationMs: Date.now() - started,
          report: { ...report, problems: report.problems.slice(0, MAX_LISTED), warnings: report.warnings.slice(0, MAX_LISTED), problemCount: report.problems.length, warningCount: report.warnings.length },
        };
        return last;
      } finally {
        running = undefined;
      }
    })();
    return reply.send(await running);
  });

  app.get(`${CONSOLE_API}/ledger/sessions`, async (request, reply) => {
    context.access.apiPrincipal(request);
    const { dataDir } = ledger();
    const query = request.query as Record<string, unknown>;
    const appId = optionalName(query['app'], 'app');
    const limit = integerParam(query['limit'], 'limit', 100, 1, 1000);
    const sessions: Array<{ tier: string; id: string; app: string | null; ambient: boolean; startedAt: string | null; modifiedAt: string }> = [];
    for (const tier of await names(path.join(dataDir, 'planes'))) {
      if (!isTierName(tier)) continue;
      const root = path.join(dataDir, 'planes', tier, 'sessions');
      for (const id of await names(root)) {
        if (!SESSION_ID.test(id)) continue;
        const dir = path.join(root, id, 'ledger');
        const meta = readSessionMeta(dir);
        if (appId !== undefined && meta.appId !== appId) continue;
        const modified = await stat(dir).then((info) => info.mtimeMs, () => 0);
        sessions.push({
          tier,
          id,
          app: meta.appId ?? null,
          ambient: meta.ambient,
          startedAt: meta.startedAt !== undefined ? new Date(meta.startedAt).toISOString() : null,
          modifiedAt: new Date(modified).toISOString(),
        });
      }
    }
    sessions.sort((a, b) => b.modifiedAt.localeCompare(a.modifiedAt));
    return reply.send({ sessions: sessions.slice(0, limit) });
  });

  app.get<{ Params: { tier: string; session: string } }>(`${CONSOLE_API}/ledger/sessions/:tier/:session`, async (request, reply) => {
    context.access.apiPrincipal(request);
    const { dataDir } = ledger();
    const { tier, session } = request.params;
    if (!isTierName(tier) || !SESSION_ID.test(session)) throw new UhlpError('UHLP_BAD_REQUEST', 'no such ledger session', { field: 'session' });
    const dir = path.join(dataDir, 'planes', tier, 'sessions', session, 'ledger');
    const present = await names(dir);
    if (present.length === 0) throw new UhlpError('UHLP_ROUTE_NOT_FOUND', `no ledger of session ${session} in plane ${tier}`);
    const segments = segmentsIn(present);
    const out: Record<string, unknown> = { tier, session, meta: readSessionMeta(dir) };
    let truncated = false;
    for (const kind of LEDGER_KINDS) {
      const last = segments[kind].at(-1);
      if (last === undefined) {
        out[kind] = [];
        continue;
      }
      const tail = await readLedgerTail(path.join(dir, segmentFileName(kind, last)));
      truncated ||= tail.truncated || segments[kind].length > 1 || tail.lines.length > MAX_ENTRIES;
      out[kind] = tail.lines.slice(-MAX_ENTRIES).map(parseLedgerLine);
    }
    return reply.send({ ...out, truncated });
  });
}

async function names(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => []);
}
