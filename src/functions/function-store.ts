/**
 * The cs-js function store, part of the runtime store (`store.functions`):
 * bundles addressed by sha256 (immutable, written once), the numbered versions
 * of each `tenant/namespace/function` (monotonic: publishing never reuses a
 * number), aliases (`prod` -> 17), and the log chunks of activations. The
 * memory and Redis implementations pass one shared suite; the Redis one uses
 * only commands KVRocks also serves (GET/SET NX, hashes, lists, EVAL).
 *
 * A tenant is an app (its id): a bundle is reachable only through the tenant
 * that published it, so one app can never run or read another's code.
 *
 * Every write that can change what a ref names (a version published, an alias
 * set) is announced to the store's ref watchers, whichever process wrote it
 * (another core, `uhlp fn`): the cores' ref caches (ref-caching-function-store.ts)
 * forget what they knew of that function.
 */
import type { FunctionRef } from './function-ref.js';

export interface FunctionVersion {
  readonly version: number;
  readonly sha256: string;
  /** Epoch ms. */
  readonly publishedAt: number;
}

export interface PublishedVersion extends FunctionVersion {
  /** False when the newest version already had this bundle: publishing it again made no new version. */
  readonly created: boolean;
}

/** A function whose refs may name another version now: a version was published or an alias set. */
export interface RefChange {
  readonly tenant: string;
  readonly namespace: string;
  readonly function: string;
}

/** What a ref watcher is told. */
export interface RefChangeListener {
  /** A version of the function was published, or one of its aliases set, by any writer of the store. */
  changed(change: RefChange): void;
  /**
   * Whether changes are heard: true once the watch is live, false when it broke
   * (a dropped connection) and until it is live again. While it is not, changes
   * can go unheard.
   */
  live(live: boolean): void;
}

export interface RefWatch {
  /** Stops the watch; the listener hears nothing more. */
  close(): Promise<void>;
}

export interface FunctionStore {
  /** Stores a bundle under its address; storing the same address again changes nothing. */
  putBundle(tenant: string, sha256: string, bytes: Uint8Array): Promise<void>;
  getBundle(tenant: string, sha256: string): Promise<Buffer | undefined>;
  /**
   * Makes the stored bundle `sha256` the next version of the function, unless
   * it is already the newest one (then that version is answered, `created: false`).
   * Throws UHLP_FN_NOT_FOUND when the bundle was not stored first.
   */
  publishVersion(tenant: string, namespace: string, fn: string, sha256: string): Promise<PublishedVersion>;
  /** Every version, oldest first; empty for an unknown function. */
  listVersions(tenant: string, namespace: string, fn: string): Promise<FunctionVersion[]>;
  /** Points `alias` at an existing version; UHLP_FN_NOT_FOUND when the version does not exist. */
  setAlias(tenant: string, namespace: string, fn: string, alias: string, version: number): Promise<void>;
  listAliases(tenant: string, namespace: string, fn: string): Promise<Record<string, number>>;
  /** The version a ref names; undefined when there is none. */
  resolve(tenant: string, namespace: string, fn: string, ref: FunctionRef): Promise<FunctionVersion | undefined>;
  /** Appends one chunk (JSON text) to an activation's logs, which expire `ttlMs` after the last append. */
  appendLogs(activationId: string, chunk: string, ttlMs: number): Promise<void>;
  /** The chunks of an activation, oldest first; undefined when none are kept. */
  readLogs(activationId: string): Promise<string[] | undefined>;
  /** Tells `listener` of every ref change from now on (RefChangeListener), until the watch is closed. */
  watchRefs(listener: RefChangeListener): RefWatch;
}
