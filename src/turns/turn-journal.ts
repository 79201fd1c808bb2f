/**
 * The turn journal: one record per finished turn of every source (HTTP, queue,
 * cron, callback, trigger, a workflow's steps and resumes, a console view), so
 * that an operator can find a turn by app, route, status, source and time and
 * look at it (the console's requests page, src/console/requests-api.ts).
 *
 * Bounded per app, twice: a ring of each app's last `size` records in each
 * core, and, with a Redis runtime store, a capped list of as many per app and
 * core that expires when the core stops writing for the app
 * (turn-journal-store.ts), so that every replica's turns are listed wherever
 * the console is opened. Per app, so that one noisy app only ever pushes out
 * its own turns, and a page of app A never reads app B's records. The pipeline opens a draft as a turn
 * begins (turn-pipeline.ts), the turn's stages add their times and calls to it
 * (turn-stages.ts), and the pipeline closes it when the answer is known: no
 * await and no work on the way but a few numbers; the records go to Redis in
 * batches, off the turn's path.
 */
import { UhlpError } from '../shared/errors.js';
import { neutralText } from '../contract/error-stack.js';
import type { ExternalCall } from '../ledger/ledger-entry.js';
import type { FinalResponse } from '../execution/result-interpreter.js';
import type { Logger } from '../logger.js';
import type { TurnJournalStore } from '../state/turn-journal-store.js';
import type { TurnEvent } from './turn-event.js';
import {
  MAX_JOURNAL_CALLS,
  MAX_JOURNAL_MESSAGE_CHARS,
  MAX_JOURNAL_NAME_CHARS,
  MAX_JOURNAL_STACK_CHARS,
  type TurnJournalEntry,
  type TurnSource,
} from './turn-journal-entry.js';

/** Records a journal keeps by default (`UHLP_TURN_JOURNAL_SIZE`). */
export const DEFAULT_TURN_JOURNAL_SIZE = 1000;
/** Records a page of the list holds at most. */
export const MAX_JOURNAL_PAGE = 200;
/** How long records wait to go to the store together, ms. */
const FLUSH_DELAY_MS = 100;

/** A turn under way: its record, and when it began on this core's clock. */
export class TurnDraft {
  constructor(
    readonly entry: TurnJournalEntry,
    readonly began: number,
  ) {}

  /** Names the trace the turn is part of (tracing calls it when a span is open). */
  setTraceId(traceId: string): void {
    this.entry.traceId = traceId.slice(0, 128);
  }
}

/** What the list is filtered by; every field optional. */
export interface TurnJournalFilter {
  readonly app?: string;
  /** A substring of the route. */
  readonly route?: string;
  /** An exact status (`404`), a class (`5xx`), or an error code (`UHLP_SCRIPT_EXCEPTION`). */
  readonly status?: string;
  readonly source?: TurnSource;
  /** Epoch ms, inclusive. */
  readonly since?: number;
  /** Epoch ms, exclusive. */
  readonly until?: number;
}

export interface TurnJournalPage {
  readonly turns: TurnJournalEntry[];
  /** Give it back as `cursor` for the next (older) page; absent on the last page. */
  readonly next?: string;
}

export interface TurnJournalOptions {
  /** Records kept per app (each app's ring, and each app's list of this core in the store). @defaultValue DEFAULT_TURN_JOURNAL_SIZE */
  readonly size?: number;
  /** This core's id (UHLP_INSTANCE_ID), in every record. */
  readonly core: string;
  /** Where records are shared between cores (Redis). @defaultValue none: this core's ring only */
  readonly store?: TurnJournalStore;
  /** Told once when the store refuses a batch. @defaultValue none */
  readonly logger?: Pick<Logger, 'warn'>;
}

/** One app's last records on this core, oldest overwritten first. */
class AppRing {
  private readonly slots: (TurnJournalEntry | undefined)[];
  /** Where the next record goes. */
  private head = 0;

  constructor(size: number) {
    this.slots = new Array<TurnJournalEntry | undefined>(size);
  }

  add(entry: TurnJournalEntry): void {
    this.slots[this.head] = entry;
    this.head = (this.head + 1) % this.slots.length;
  }

  records(): TurnJournalEntry[] {
    return this.slots.filter((entry): entry is TurnJournalEntry => entry !== undefined);
  }

  find(id: string): TurnJournalEntry | undefined {
    for (const entry of this.slots) if (entry?.id === id) return entry;
    return undefined;
  }
}

export class TurnJournal {
  /** Records kept per app. */
  readonly size: number;
  /** A ring per app: the apps of the core's definitions bound how many. */
  private readonly rings = new Map<string, AppRing>();
  private pending = new Map<string, TurnJournalEntry[]>();
  private flushTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private warned = false;

  constructor(private readonly options: TurnJournalOptions) {
    // A ring of none would be no ring: the core makes no journal for a size of 0 (UHLP_TURN_JOURNAL_SIZE=0).
    this.size = Math.max(1, options.size ?? DEFAULT_TURN_JOURNAL_SIZE);
  }

  /** The draft of a turn that begins now. */
  open(event: TurnEvent): TurnDraft {
    const entry: TurnJournalEntry = {
      id: event.requestId,
      app: event.app.id,
      component: event.component.id,
      route: (event.route ?? '').slice(0, MAX_JOURNAL_NAME_CHARS),
      source: event.source ?? 'internal',
      core: this.options.core,
      startedAt: Date.now(),
      durationMs: 0,
      status: 0,
      timing: { limitMs: 0, claimMs: 0, sessionMs: 0, executionMs: 0, ledgerMs: 0 },
      toolCalls: 0,
      modelCalls: 0,
      calls: [],
    };
    if (event.traceId !== undefined) entry.traceId = event.traceId.slice(0, 128);
    if (event.workflowRun !== undefined) entry.runId = event.workflowRun.runId;
    return new TurnDraft(entry, performance.now());
  }

  /** Closes the draft of a turn that answered. */
  answered(draft: TurnDraft, answer: FinalResponse): void {
    const { entry } = draft;
    entry.status = answer.status;
    const failure = answer.failure;
    if (failure !== undefined) {
      entry.code = failure.code;
      entry.error = boundedError(failure.code, failure.message, failure.stack);
    } else if (answer.status >= 400) {
      const code = codeOfBody(answer.body);
      if (code !== undefined) entry.code = code;
    }
    this.close(draft);
  }

  /** Closes the draft of a turn that threw (a rate limit, a sandbox failure, the core's own error). */
  failed(draft: TurnDraft, error: unknown): void {
    const { entry } = draft;
    const uhlp = error instanceof UhlpError ? error : undefined;
    entry.status = uhlp?.statusCode ?? 500;
    const code = uhlp?.code ?? 'UHLP_INTERNAL';
    entry.code = code;
    entry.error = boundedError(code, uhlp?.message ?? 'internal error; see the core log for this request id', undefined);
    this.close(draft);
  }

  /** Puts one record in the ring (and on the way to the store): a record another core wrote is never added here. */
  add(entry: TurnJournalEntry): void {
    let ring = this.rings.get(entry.app);
    if (ring === undefined) this.rings.set(entry.app, (ring = new AppRing(this.size)));
    ring.add(entry);
    if (this.options.store === undefined) return;
    let waiting = this.pending.get(entry.app);
    if (waiting === undefined) this.pending.set(entry.app, (waiting = []));
    waiting.push(entry);
    // A store that cannot keep up loses the app's oldest records, not the core's memory.
    if (waiting.length > this.size) waiting.splice(0, waiting.length - this.size);
    this.flushTimer ??= setTimeout(() => void this.flush(), FLUSH_DELAY_MS).unref();
  }

  /** One page of records, newest first: from the store (every core's) when there is one, else this core's ring. */
  async list(filter: TurnJournalFilter, limit: number, cursor?: string): Promise<TurnJournalPage> {
    const after = cursor !== undefined ? parseCursor(cursor) : undefined;
    const all = await this.records(filter.app);
    const turns: TurnJournalEntry[] = [];
    for (const entry of all) {
      if (after !== undefined && !olderThan(entry, after)) continue;
      if (!matches(entry, filter)) continue;
      if (turns.length === limit) return { turns, next: cursorOf(turns[turns.length - 1]!) };
      turns.push(entry);
    }
    return { turns };
  }

  /** The record of one turn, from this core's ring or the store. */
  async get(id: string): Promise<TurnJournalEntry | undefined> {
    for (const ring of this.rings.values()) {
      const found = ring.find(id);
      if (found !== undefined) return found;
    }
    if (this.options.store === undefined) return undefined;
    return (await this.options.store.recent()).find((entry) => entry.id === id);
  }

  /** Sends what waits for the store (and waits for it): tests, and a core that stops. */
  async flush(): Promise<void> {
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    await this.flushing;
    const store = this.options.store;
    if (store === undefined || this.pending.size === 0) return;
    const batch = [...this.pending.values()].flat();
    this.pending = new Map();
    this.flushing = store.append(batch).then(
      () => {
        this.flushing = undefined;
      },
      (error: unknown) => {
        this.flushing = undefined;
        // The journal is for looking, never a reason to fail a turn: a lost batch is logged once.
        if (!this.warned) this.options.logger?.warn({ err: error }, 'turn journal records not written to the runtime store');
        this.warned = true;
      },
    );
    await this.flushing;
  }

  private close(draft: TurnDraft): void {
    draft.entry.durationMs = roundMs(performance.now() - draft.began);
    this.add(draft.entry);
  }

  /** Every record (of `app` only, when it names one), newest first. */
  private async records(app?: string): Promise<TurnJournalEntry[]> {
    const rings = app !== undefined ? [this.rings.get(app)] : [...this.rings.values()];
    const local = rings.flatMap((ring) => ring?.records() ?? []);
    let all = local;
    if (this.options.store !== undefined) {
      // The store's lists and what this core has not sent yet, each record once.
      const seen = new Set<string>();
      all = [];
      for (const entry of [...(await this.options.store.recent(app)), ...local]) {
        const key = `${entry.core}\u0000${entry.id}`;
        if (seen.has(key)) continue;
        seen.add(key);
        all.push(entry);
      }
    }
    return all.sort(newestFirst);
  }
}

/** Adds what an execution's MCP record holds to the draft: its tool and model calls. */
export function addTurnCalls(draft: TurnDraft, calls: readonly ExternalCall[]): void {
  const { entry } = draft;
  for (const call of calls) {
    const model = call.kind === 'llm';
    if (model) entry.modelCalls += 1;
    else entry.toolCalls += 1;
    if (entry.calls.length >= MAX_JOURNAL_CALLS) continue;
    entry.calls.push({
      kind: model ? 'model' : 'tool',
      name: neutralText((model ? call.model : undefined) ?? call.target, MAX_JOURNAL_NAME_CHARS),
      outcome: neutralText(call.status ?? 'ok', 128),
      ...(call.duration_ms !== undefined ? { durationMs: call.duration_ms } : {}),
      ...(call.tokens !== undefined ? { tokens: { prompt: call.tokens.prompt, completion: call.tokens.completion } } : {}),
    });
  }
}

/** Milliseconds since `from` (performance.now()), to the microsecond. */
export function msSince(from: number): number {
  return roundMs(performance.now() - from);
}

/** Milliseconds to the microsecond. */
export function roundMs(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

function boundedError(code: string, message: string, stack: string | undefined): NonNullable<TurnJournalEntry['error']> {
  return {
    code: neutralText(code, 128),
    message: neutralText(message, MAX_JOURNAL_MESSAGE_CHARS),
    // A stack keeps its line breaks: it is shown as preformatted text.
    ...(stack !== undefined ? { stack: stack.length <= MAX_JOURNAL_STACK_CHARS ? stack : `${stack.slice(0, MAX_JOURNAL_STACK_CHARS - 1)}…` } : {}),
  };
}

/** The `code` of a JSON error answer the core or the app sent; undefined for anything else. */
function codeOfBody(body: Buffer | string): string | undefined {
  const text = typeof body === 'string' ? body : body.length <= 64 * 1024 ? body.toString('utf8') : '';
  const found = /"code"\s*:\s*"([A-Za-z0-9_.-]{1,128})"/.exec(text.slice(0, 4096));
  return found?.[1];
}

function matches(entry: TurnJournalEntry, filter: TurnJournalFilter): boolean {
  if (filter.app !== undefined && entry.app !== filter.app) return false;
  if (filter.source !== undefined && entry.source !== filter.source) return false;
  if (filter.route !== undefined && !entry.route.includes(filter.route)) return false;
  if (filter.since !== undefined && entry.startedAt < filter.since) return false;
  if (filter.until !== undefined && entry.startedAt >= filter.until) return false;
  if (filter.status !== undefined && !statusMatches(entry, filter.status)) return false;
  return true;
}

function statusMatches(entry: TurnJournalEntry, status: string): boolean {
  if (/^\d{3}$/.test(status)) return entry.status === Number(status);
  if (/^[1-5]xx$/.test(status)) return Math.floor(entry.status / 100) === Number(status[0]);
  return entry.code === status;
}

interface Cursor {
  readonly startedAt: number;
  readonly id: string;
}

function newestFirst(a: TurnJournalEntry, b: TurnJournalEntry): number {
  return b.startedAt - a.startedAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
}

function olderThan(entry: TurnJournalEntry, cursor: Cursor): boolean {
  return entry.startedAt < cursor.startedAt || (entry.startedAt === cursor.startedAt && entry.id < cursor.id);
}

function cursorOf(entry: TurnJournalEntry): string {
  return `${entry.startedAt}.${entry.id}`;
}

function parseCursor(cursor: string): Cursor {
  const found = /^(\d{1,15})\.([\x21-\x7e]{1,128})$/.exec(cursor);
  if (found === null) throw new UhlpError('UHLP_BAD_REQUEST', 'cursor must be a cursor a previous page gave', { field: 'cursor' });
  return { startedAt: Number(found[1]), id: found[2]! };
}
