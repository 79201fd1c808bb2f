/**
 * What the memory stores of one MemoryRuntimeStore share: its clock, and whether
 * it is still open. Being single-threaded JavaScript, each memory method is
 * atomic as long as it does not await, which none of them does.
 */
export interface MemoryContext {
  /** Epoch milliseconds; tests drive time with it. */
  readonly now: () => number;
  /** Throws UHLP_STATE_UNAVAILABLE once the store is closed, as the Redis store fails once disconnected. */
  readonly assertOpen: () => void;
}

/** A memory store holding entries that expire: the runtime store sweeps them out now and then. */
export interface SweptStore {
  /** Drops every expired entry (they are also dropped when read). */
  sweep(): void;
}
