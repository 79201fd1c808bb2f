/**
 * `session.json`, written beside a session's ledgers when it starts: the app
 * it belongs to, whether it is the app's ambient session, and when it began.
 * Retention needs it (per-app limits; an ambient session ends within the hour,
 * so its last segment may go once it is old). Not sealed: it only says which
 * limits apply, and whoever could rewrite it could remove the files anyway.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SESSION_META_FILE } from './ledger-paths.js';

export interface SessionMeta {
  appId?: string;
  ambient: boolean;
  /** Epoch ms; undefined when unknown. */
  startedAt?: number;
}

/** The session's record; sessions begun before it existed (or with a damaged one) have only defaults. */
export function readSessionMeta(dir: string): SessionMeta {
  try {
    const value = JSON.parse(readFileSync(path.join(dir, SESSION_META_FILE), 'utf8')) as { app_id?: unknown; ambient?: unknown; started_at?: unknown };
    const startedAt = typeof value.started_at === 'string' ? Date.parse(value.started_at) : NaN;
    return {
      ...(typeof value.app_id === 'string' ? { appId: value.app_id } : {}),
      ambient: value.ambient === true,
      ...(Number.isFinite(startedAt) ? { startedAt } : {}),
    };
  } catch {
    return { ambient: false };
  }
}
