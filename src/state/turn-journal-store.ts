/**
 * Where the turn journal's records are shared between the cores of one
 * runtime store (src/turns/turn-journal.ts): each core appends its own, one
 * list per app, and reads every core's (of one app, or of all). Only Redis has
 * one: a memory store's journal is the core's own rings.
 */
import type { TurnJournalEntry } from '../turns/turn-journal-entry.js';

export interface TurnJournalStore {
  /** Appends this core's records, oldest first; each app's list of this core keeps its newest `size`. */
  append(entries: readonly TurnJournalEntry[]): Promise<void>;
  /** The records of `app` (every app's without one) of every core that wrote some within the TTL (at most `size` per app and core), in no order. */
  recent(app?: string): Promise<TurnJournalEntry[]>;
}
