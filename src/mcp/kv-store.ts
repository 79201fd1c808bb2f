/**
 * The kv seam behind the `core.kv.*` tools: the three kv methods of the
 * runtime store, so the core passes its RuntimeStore (memory or Redis) as is.
 */
import type { RuntimeStore } from '../state/runtime-store.js';

export type KvStore = Pick<RuntimeStore, 'kvGet' | 'kvSet' | 'kvDelete'>;
