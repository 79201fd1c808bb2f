/**
 * The index of workflow runs that the console lists: one summary per run,
 * newest first, filtered by app, component, status and creation time, paged
 * by a cursor. Run records are stored by id only (run-service.ts); the run
 * service writes each record's summary here after every change, so the list
 * follows runs without reading their records.
 *
 * Two implementations pass one shared test suite: `MemoryRunIndex` (the
 * embedded default, beside the memory runtime store) and `RedisRunIndex`
 * (shared by every core on one Redis). A failed index write never fails a
 * run: the index is a view, and the run service logs and goes on.
 */
import type { RunStatus, RunSummary } from '../contract/workflow/run-summary.js';

export type { RunSummary } from '../contract/workflow/run-summary.js';
import type { RunRecord } from './run-record.js';


export interface RunQuery {
  readonly app?: string;
  readonly component?: string;
  readonly status?: RunStatus;
  /** Runs created at or after this time, epoch ms. */
  readonly since?: number;
  /** Runs created before this time, epoch ms. */
  readonly until?: number;
  /** Runs per page, 1 - MAX_RUN_PAGE. */
  readonly limit: number;
  /** Where the previous page ended (its `next`). @defaultValue the newest run */
  readonly cursor?: string;
}

export interface RunPage {
  readonly runs: readonly RunSummary[];
  /** The cursor of the next page; absent on the last one. */
  readonly next?: string;
  /**
   * Runs that match the query's filters (all pages), up to MAX_COUNTED; `countCapped`
   * when there are more. Counted on the first page only (no cursor): the next pages
   * of one list have the same total.
   */
  readonly total?: number;
  readonly countCapped?: boolean;
}

export interface RunIndex {
  /** Records the run's summary (a new run, or a change of one); never rejects. */
  put(summary: RunSummary): void;
  list(query: RunQuery): Promise<RunPage>;
  /** Resolves once every put so far is written (tests, benchmarks). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Largest page. */
export const MAX_RUN_PAGE = 500;
/** Runs a filtered count reads at most; past it the count says "at least". */
export const MAX_COUNTED = 100_000;

export function summaryOf(record: RunRecord): RunSummary {
  return {
    id: record.id,
    app: record.appId,
    component: record.componentId,
    workflowId: record.workflowId,
    revision: record.revision,
    status: record.status,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    steps: record.droppedSteps + record.steps.length,
    attempts: record.attempts,
    ...(record.paused !== undefined ? { paused: record.paused } : {}),
    ...(record.cancellation !== undefined ? { cancellation: { by: record.cancellation.by, at: record.cancellation.at, via: record.cancellation.via } } : {}),
    ...(record.error !== undefined ? { errorCode: record.error.code } : {}),
    ...(record.parent !== undefined ? { parent: record.parent } : {}),
  };
}

/** Whether a summary passes the query's filters (time included). */
export function matches(summary: RunSummary, query: RunQuery): boolean {
  if (query.app !== undefined && summary.app !== query.app) return false;
  if (query.component !== undefined && summary.component !== query.component) return false;
  if (query.status !== undefined && summary.status !== query.status) return false;
  const created = Date.parse(summary.createdAt);
  if (query.since !== undefined && created < query.since) return false;
  if (query.until !== undefined && created >= query.until) return false;
  return true;
}

/** Whether a query filters on more than time (then counting means reading summaries). */
export function filtersBeyondTime(query: RunQuery): boolean {
  return query.app !== undefined || query.component !== undefined || query.status !== undefined;
}

/**
 * A cursor is the position of the last run of a page in the newest-first
 * order: its creation time and id (ids break ties). Opaque to clients.
 */
export interface RunCursor {
  readonly at: number;
  readonly id: string;
}

export function encodeCursor(cursor: RunCursor): string {
  return Buffer.from(`${cursor.at}:${cursor.id}`, 'utf8').toString('base64url');
}

/** The cursor a client sent back, or undefined when it is not one. */
export function decodeCursor(text: string): RunCursor | undefined {
  const raw = Buffer.from(text, 'base64url').toString('utf8');
  const match = /^(\d{1,15}):(RUN-[0-9A-Za-z-]{1,64})$/.exec(raw);
  return match ? { at: Number(match[1]), id: match[2]! } : undefined;
}

/** Whether run (at, id) comes after the cursor in newest-first order. */
export function isAfter(at: number, id: string, cursor: RunCursor): boolean {
  return at < cursor.at || (at === cursor.at && id < cursor.id);
}
