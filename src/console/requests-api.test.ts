/**
 * The console's requests API through fastify's inject (real routes, a real
 * journal, ledger files on disk): filters and paging, one turn with its
 * ledger entries and trace link, refused values, and who may read it.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApplicationRegistry } from '../apps/application-registry.js';
import { createLogger } from '../logger.js';
import { createMetrics } from '../metrics.js';
import type { SandboxManager } from '../sandbox/sandbox-manager.js';
import { errorBody, UhlpError } from '../shared/errors.js';
import { MemoryRuntimeStore } from '../state/memory-runtime-store.js';
import type { TurnJournalEntry } from '../turns/turn-journal-entry.js';
import { TurnJournal } from '../turns/turn-journal.js';
import { TurnKeeper } from '../turns/turn-keeper.js';
import type { TurnPipeline } from '../turns/turn-pipeline.js';
import { enforceAudiences } from '../core/route-audience.js';
import { registerConsoleRoutes } from './console-routes.js';
import { parseConsoleTokens } from './console-tokens.js';
import { traceUrlOf } from './requests-api.js';
import { FileLedger } from '../ledger/file-ledger.js';
import { hashPayload } from '../ledger/ledger-entry.js';
import { segmentsIn } from '../ledger/ledger-paths.js';
import { readTurnEntries } from '../ledger/turn-entries.js';
import { readdirSync } from 'node:fs';
import { createSessionIdGenerator } from '../state/session-id.js';

const FROM_PAGE = { 'x-uhlp-console': '1', host: '127.0.0.1:8080' };
const SESSION = 'SES-unit-1';

let app: FastifyInstance | undefined;

afterEach(async () => {
  await app?.close();
  app = undefined;
});

function entry(id: string, over: Partial<TurnJournalEntry> = {}): TurnJournalEntry {
  return {
    id,
    app: 'shop',
    component: 'quote',
    route: 'GET /quote',
    source: 'http',
    core: 'core-1',
    startedAt: Date.parse('2026-11-29T10:00:00Z'),
    durationMs: 4,
    status: 200,
    timing: { limitMs: 0, claimMs: 0, sessionMs: 0.1, executionMs: 3, ledgerMs: 0.5 },
    toolCalls: 0,
    modelCalls: 0,
    calls: [],
    ...over,
  };
}

/** A data directory with one session's ledger: turns 1 and 2, an exec and an evidence entry each. */
function ledgerDir(): string {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-requests-api-'));
  const dir = path.join(dataDir, 'planes', 'development', 'sessions', SESSION, 'ledger');
  mkdirSync(dir, { recursive: true });
  const exec = [1, 2].map((turn) => JSON.stringify({ entry_type: 'L-EXEC', session_id: SESSION, turn_number: turn, request_id: `r-${turn}`, status: 'ok', entry_hash: `h${turn}` }));
  const evidence = [1, 2].map((turn) => JSON.stringify({ entry_type: 'L-EVIDENCE', session_id: SESSION, turn_number: turn, status: 'ok', external_calls: [] }));
  writeFileSync(path.join(dir, 'exec.jsonl'), `${exec.join('\n')}\n`);
  writeFileSync(path.join(dir, 'evidence.jsonl'), `${evidence.join('\n')}\n`);
  return dataDir;
}

async function consoleApp(options: { tokens?: string; traceUrlTemplate?: string; dataDir?: string } = {}): Promise<{ core: FastifyInstance; journal: TurnJournal }> {
  const store = new MemoryRuntimeStore();
  const journal = new TurnJournal({ size: 100, core: 'core-1' });
  app = Fastify();
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  app.setErrorHandler((error, request, reply) => {
    const uhlp = error instanceof UhlpError ? error : new UhlpError('UHLP_INTERNAL', String(error));
    return reply.code(uhlp.statusCode).send(errorBody(uhlp, request.id));
  });
  // Behind the route audience gate, as the core registers them: the gate finds whether the client is on loopback.
  enforceAudiences(app, {}).declare('operators', () => registerConsoleRoutes(
    app!,
    {
      config: {
        enabled: true,
        tokens: parseConsoleTokens(options.tokens ?? '', 'test'),
        sandboxHost: '127.0.0.1',
        sandboxPort: 0,
        journalSize: 100,
        ...(options.traceUrlTemplate !== undefined ? { traceUrlTemplate: options.traceUrlTemplate } : {}),
      },
      registry: { snapshot: { revision: 'r', apps: new Map(), problems: [], heldBack: [] } } as unknown as ApplicationRegistry,
      sandboxes: { readiness: () => ({ ready: true, pools: [] }), driverName: 'process', isolation: 'namespaces' } as unknown as SandboxManager,
      metrics: createMetrics(),
      logger: createLogger('silent'),
      store,
      turns: new TurnKeeper({ store: store.sessions, sessionTtlMs: 60_000 }),
      assets: undefined,
      sandboxPort: () => 9999,
      ledger: { dataDir: options.dataDir ?? ledgerDir() },
      journal,
    },
    {} as TurnPipeline,
  ));
  return { core: app, journal };
}

describe('the console requests API', () => {
  it('lists turns newest first, filtered, in pages a cursor continues', async () => {
    const { core, journal } = await consoleApp();
    for (let i = 0; i < 5; i++) journal.add(entry(`ok-${i}`, { startedAt: 1000 + i }));
    journal.add(entry('dead', { source: 'queue', route: 'jobs', status: 500, code: 'UHLP_SCRIPT_EXCEPTION', startedAt: 2000 }));
    const get = async (query: string): Promise<{ status: number; body: any }> => {
      const response = await core.inject({ method: 'GET', url: `/_uhlp/console/api/requests${query}`, remoteAddress: '127.0.0.1', headers: FROM_PAGE });
      return { status: response.statusCode, body: response.json() };
    };
    const first = await get('?limit=2');
    expect(first.body.turns.map((turn: TurnJournalEntry) => turn.id)).toEqual(['dead', 'ok-4']);
    expect(first.body.size).toBe(100);
    const second = await get(`?limit=2&cursor=${encodeURIComponent(first.body.next)}`);
    expect(second.body.turns.map((turn: TurnJournalEntry) => turn.id)).toEqual(['ok-3', 'ok-2']);
    expect((await get('?source=queue&status=5xx')).body.turns.map((turn: TurnJournalEntry) => turn.id)).toEqual(['dead']);
    expect((await get('?status=UHLP_SCRIPT_EXCEPTION&app=shop&route=jobs')).body.turns).toHaveLength(1);
    expect((await get('?since=1003&until=1005')).body.turns.map((turn: TurnJournalEntry) => turn.id)).toEqual(['ok-4', 'ok-3']);
  });

  it("filters by app from the app's own ring: a noisy app does not push a quiet one's turns out", async () => {
    const { core, journal } = await consoleApp();
    journal.add(entry('quiet-1', { app: 'quiet', startedAt: 500 }));
    // Twice the journal's size of another app's turns, all newer.
    for (let i = 0; i < 200; i++) journal.add(entry(`noisy-${i}`, { app: 'noisy', startedAt: 1000 + i }));
    const get = async (query: string): Promise<any> =>
      (await core.inject({ method: 'GET', url: `/_uhlp/console/api/requests${query}`, remoteAddress: '127.0.0.1', headers: FROM_PAGE })).json();
    expect((await get('?app=quiet')).turns.map((turn: TurnJournalEntry) => turn.id)).toEqual(['quiet-1']);
    const noisy = await get('?app=noisy&limit=200');
    expect(noisy.turns).toHaveLength(100);
    expect(noisy.turns[0].id).toBe('noisy-199');
    expect((await get('?limit=200')).turns).toHaveLength(101);
    expect((await core.inject({ method: 'GET', url: '/_uhlp/console/api/requests/quiet-1', remoteAddress: '127.0.0.1', headers: FROM_PAGE })).statusCode).toBe(200);
  });

  it.each([
    ['an unknown source', '?source=carrier-pigeon', 'source'],
    ['a status that is none', '?status=<b>', 'status'],
    ['a bad app name', '?app=a/b', 'app'],
    ['a limit over the page', '?limit=5000', 'limit'],
    ['a cursor it did not give', '?cursor=nonsense', 'cursor'],
    ['a bad time', '?since=yesterday', 'since'],
  ])('refuses %s', async (_name, query, field) => {
    const { core } = await consoleApp();
    const response = await core.inject({ method: 'GET', url: `/_uhlp/console/api/requests${query}`, remoteAddress: '127.0.0.1', headers: FROM_PAGE });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 'UHLP_BAD_REQUEST', details: { field } });
  });

  it('answers one turn with its own ledger entries and its trace link; 404 for one it does not keep', async () => {
    const { core, journal } = await consoleApp({ traceUrlTemplate: 'https://traces.example/t/{traceId}?from=console' });
    journal.add(entry('r-2', { ledger: { tier: 'development', sessionId: SESSION, turnNumber: 2 }, traceId: 'abc def/1' }));
    const response = await core.inject({ method: 'GET', url: '/_uhlp/console/api/requests/r-2', remoteAddress: '127.0.0.1', headers: FROM_PAGE });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.turn.id).toBe('r-2');
    expect(body.ledger.exec).toEqual([expect.objectContaining({ turn_number: 2, request_id: 'r-2' })]);
    expect(body.ledger.evidence).toEqual([expect.objectContaining({ turn_number: 2, entry_type: 'L-EVIDENCE' })]);
    expect(body.traceUrl).toBe('https://traces.example/t/abc%20def%2F1?from=console');
    const missing = await core.inject({ method: 'GET', url: '/_uhlp/console/api/requests/r-9', remoteAddress: '127.0.0.1', headers: FROM_PAGE });
    expect(missing.statusCode).toBe(404);
  });

  it("shows a turn whose entries are in an older segment of a session whose ledgers rotated", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-requests-rotated-'));
    let clock = Date.UTC(2026, 10, 29);
    const ledger = new FileLedger({ dataDir, tier: 'development', now: () => new Date((clock += 1000)), segmentBytes: 1500 });
    const sid = createSessionIdGenerator()();
    await ledger.startSession(sid, { appId: 'shop', ambient: false });
    for (let n = 1; n <= 24; n++) {
      expect(await ledger.recordTurns([{ sessionId: sid, turnNumber: n, status: 'ok', queryHash: hashPayload({ n }), resultHash: hashPayload(`r${n}`), requestId: `req-${n}` }])).toEqual([]);
    }
    await ledger.close();
    const dir = path.join(dataDir, 'planes', 'development', 'sessions', sid, 'ledger');
    const segments = segmentsIn(readdirSync(dir));
    expect(segments.exec.length).toBeGreaterThanOrEqual(4);

    const { core, journal } = await consoleApp({ dataDir });
    for (const n of [2, 13, 24]) journal.add(entry(`req-${n}`, { ledger: { tier: 'development', sessionId: sid, turnNumber: n } }));
    for (const n of [2, 13, 24]) {
      const response = await core.inject({ method: 'GET', url: `/_uhlp/console/api/requests/req-${n}`, remoteAddress: '127.0.0.1', headers: FROM_PAGE });
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body.ledger.exec).toEqual([expect.objectContaining({ turn_number: n, request_id: `req-${n}`, entry_type: 'L-EXEC' })]);
      expect(body.ledger.evidence).toEqual([expect.objectContaining({ turn_number: n, entry_type: 'L-EVIDENCE' })]);
    }
    // A tail too short to reach back to the turn: the segment is read line by line instead.
    for (const n of [1, 2, 12, 24]) expect(await readTurnEntries(dir, 'exec', segments.exec, n, 200)).toEqual([expect.objectContaining({ turn_number: n, request_id: `req-${n}` })]);
    // A turn no segment holds.
    expect(await readTurnEntries(dir, 'exec', segments.exec, 99)).toEqual([]);
    expect(await readTurnEntries(dir, 'exec', segments.exec, 0)).toEqual([]);
  });

  it('gives no trace link without a template or without a trace id', () => {
    expect(traceUrlOf(undefined, { traceId: 'abc' })).toBeUndefined();
    expect(traceUrlOf('http://jaeger:16686/trace/{traceId}', {})).toBeUndefined();
    expect(traceUrlOf('http://jaeger:16686/trace/{traceId}', { traceId: 'javascript:alert(1)' })).toBe('http://jaeger:16686/trace/javascript%3Aalert(1)');
  });

  it('is the console audience: no client beyond loopback without a token, a read token may read', async () => {
    const reader = 'r'.repeat(40);
    const { core, journal } = await consoleApp({ tokens: `grace read ${reader}` });
    journal.add(entry('r-1'));
    const anonymous = await core.inject({ method: 'GET', url: '/_uhlp/console/api/requests', remoteAddress: '10.1.2.3', headers: FROM_PAGE });
    expect(anonymous.statusCode).toBe(401);
    const read = await core.inject({ method: 'GET', url: '/_uhlp/console/api/requests/r-1', remoteAddress: '10.1.2.3', headers: { ...FROM_PAGE, authorization: `Bearer ${reader}` } });
    expect(read.statusCode).toBe(200);
  });
});
