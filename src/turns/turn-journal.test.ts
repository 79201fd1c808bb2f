import { describe, expect, it } from 'vitest';
import { UhlpError } from '../shared/errors.js';
import type { TurnJournalEntry, TurnSource } from './turn-journal-entry.js';
import { addTurnCalls, TurnDraft, TurnJournal } from './turn-journal.js';

let counter = 0;

function entry(over: Partial<TurnJournalEntry> = {}): TurnJournalEntry {
  counter += 1;
  return {
    id: `r-${String(counter).padStart(4, '0')}`,
    app: 'a',
    component: 'c',
    route: 'GET /x',
    source: 'http',
    core: 'core-1',
    startedAt: 1_000_000 + counter,
    durationMs: 1,
    status: 200,
    timing: { limitMs: 0, claimMs: 0, sessionMs: 0, executionMs: 1, ledgerMs: 0 },
    toolCalls: 0,
    modelCalls: 0,
    calls: [],
    ...over,
  };
}

function draftOf(over: Partial<TurnJournalEntry> = {}): TurnDraft {
  return new TurnDraft(entry(over), performance.now());
}

describe('the turn journal', () => {
  it('keeps the newest `size` records of the core: the ring never grows', async () => {
    const journal = new TurnJournal({ size: 3, core: 'core-1' });
    const added = Array.from({ length: 7 }, () => entry());
    for (const record of added) journal.add(record);
    const page = await journal.list({}, 100);
    expect(page.turns.map((turn) => turn.id)).toEqual(added.slice(-3).reverse().map((turn) => turn.id));
    expect(page.next).toBeUndefined();
    expect(await journal.get(added[0]!.id)).toBeUndefined();
    expect(await journal.get(added[6]!.id)).toBe(added[6]);
  });

  it.each<[string, Record<string, unknown>, string[]]>([
    ['app', { app: 'b' }, ['b-ok']],
    ['source', { source: 'queue' as TurnSource }, ['queue-dead']],
    ['an exact status', { status: '404' }, ['a-404']],
    ['a status class', { status: '5xx' }, ['queue-dead', 'a-500']],
    ['an error code', { status: 'UHLP_SCRIPT_EXCEPTION' }, ['a-500']],
    ['a part of the route', { route: '/orders' }, ['b-ok']],
    ['since (inclusive) and until (exclusive)', { since: 2_000_002, until: 2_000_004 }, ['a-404', 'a-500']],
  ])('filters by %s', async (_name, filter, expected) => {
    const journal = new TurnJournal({ size: 10, core: 'core-1' });
    journal.add(entry({ id: 'a-ok', startedAt: 2_000_001 }));
    journal.add(entry({ id: 'a-500', startedAt: 2_000_002, status: 500, code: 'UHLP_SCRIPT_EXCEPTION' }));
    journal.add(entry({ id: 'a-404', startedAt: 2_000_003, status: 404, code: 'UHLP_ROUTE_NOT_FOUND' }));
    journal.add(entry({ id: 'b-ok', app: 'b', route: 'POST /orders/:id', startedAt: 2_000_004 }));
    journal.add(entry({ id: 'queue-dead', source: 'queue', route: 'jobs', status: 502, startedAt: 2_000_005 }));
    const page = await journal.list(filter, 100);
    expect(page.turns.map((turn) => turn.id)).toEqual(expected);
  });

  it('pages newest first with a cursor: every record once, none lost between pages, even with equal start times', async () => {
    const journal = new TurnJournal({ size: 50, core: 'core-1' });
    const added = Array.from({ length: 23 }, (_, i) => entry({ startedAt: 3_000_000 + Math.floor(i / 4) }));
    for (const record of added) journal.add(record);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await journal.list({}, 5, cursor);
      expect(page.turns.length).toBeLessThanOrEqual(5);
      seen.push(...page.turns.map((turn) => turn.id));
      cursor = page.next;
      pages += 1;
    } while (cursor !== undefined);
    expect(pages).toBe(5);
    expect(new Set(seen).size).toBe(23);
    expect(seen).toEqual([...added].sort((a, b) => b.startedAt - a.startedAt || b.id.localeCompare(a.id)).map((turn) => turn.id));
  });

  it('refuses a cursor it did not give', async () => {
    const journal = new TurnJournal({ size: 5, core: 'core-1' });
    await expect(journal.list({}, 5, 'x<script>')).rejects.toMatchObject({ code: 'UHLP_BAD_REQUEST' });
  });

  it('closes an answered turn with its status, failure and duration; control characters never reach the record', async () => {
    const journal = new TurnJournal({ size: 5, core: 'core-1' });
    const draft = draftOf();
    const hostile = '<img src=x onerror=window.__pwned=1>\u001b[31m';
    journal.answered(draft, { status: 500, headers: {}, body: '', failure: { code: 'UHLP_SCRIPT_EXCEPTION', message: hostile, stack: 'at handler (index.js:3:9)' } });
    const [turn] = (await journal.list({}, 5)).turns;
    expect(turn).toMatchObject({ status: 500, code: 'UHLP_SCRIPT_EXCEPTION', error: { code: 'UHLP_SCRIPT_EXCEPTION', stack: 'at handler (index.js:3:9)' } });
    expect(turn!.error!.message).toBe('<img src=x onerror=window.__pwned=1>\uFFFD[31m');
    expect(turn!.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("takes an error answer's code from its body, and a thrown error's status and code", async () => {
    const journal = new TurnJournal({ size: 5, core: 'core-1' });
    journal.answered(draftOf({ id: 'limited' }), { status: 429, headers: {}, body: '{"code":"UHLP_RATE_LIMITED","message":"slow down"}' });
    journal.failed(draftOf({ id: 'thrown' }), new UhlpError('UHLP_POOL_EXHAUSTED', 'no sandbox'));
    journal.failed(draftOf({ id: 'internal' }), new Error('secret detail'));
    expect(await journal.get('limited')).toMatchObject({ status: 429, code: 'UHLP_RATE_LIMITED' });
    expect(await journal.get('thrown')).toMatchObject({ status: 503, code: 'UHLP_POOL_EXHAUSTED', error: { message: 'no sandbox' } });
    const internal = await journal.get('internal');
    expect(internal).toMatchObject({ status: 500, code: 'UHLP_INTERNAL' });
    expect(JSON.stringify(internal)).not.toContain('secret detail');
  });

  it('counts every tool and model call and keeps at most 50 of them', () => {
    const draft = draftOf();
    addTurnCalls(draft, [
      { kind: 'llm', target: 'core.llm.generate', model: 'small', status: 'ok', duration_ms: 12, tokens: { prompt: 3, completion: 4 } },
      ...Array.from({ length: 60 }, (_, i) => ({ kind: 'mcp', target: `core.kv.get`, status: i === 0 ? 'UHLP_KV_DENIED' : 'ok', duration_ms: 1 })),
    ]);
    expect(draft.entry.modelCalls).toBe(1);
    expect(draft.entry.toolCalls).toBe(60);
    expect(draft.entry.calls).toHaveLength(50);
    expect(draft.entry.calls[0]).toEqual({ kind: 'model', name: 'small', outcome: 'ok', durationMs: 12, tokens: { prompt: 3, completion: 4 } });
    expect(draft.entry.calls[1]).toMatchObject({ kind: 'tool', name: 'core.kv.get', outcome: 'UHLP_KV_DENIED' });
  });

  it('takes a trace id from tracing, bounded', () => {
    const draft = draftOf();
    draft.setTraceId('a'.repeat(500));
    expect(draft.entry.traceId).toHaveLength(128);
  });
});
