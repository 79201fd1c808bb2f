/**
 * Where the turn journal's records are shared between the cores of one
 * runtime store (src/turns/turn-journal.ts): each core appends its own, and
 * reads every core's. Only Redis has one: a memory store's journal is the
 * core's own ring.
 */
import type { TurnJournalEntry } from '../turns/turn-journal-entry.js';

export interface TurnJournalStore {
  /** Appends this core's records, oldest first; its list keeps the newest `size`. */
  append(entries: readonly TurnJournalEntry[]): Promise<void>;
  /** The records of every core that wrote some within the TTL (at most `size` each), in no order. */
  recent(): Promise<TurnJournalEntry[]>;
}
