/**
 * The kv seam behind the `core.kv.*` tools: the three kv methods of the
 * runtime store's kv, so the core passes its `store.kv` (memory or Redis) as is.
 */
import type { KvStore as RuntimeKvStore } from '../state/kv-store.js';

export type KvStore = Pick<RuntimeKvStore, 'kvGet' | 'kvSet' | 'kvDelete'>;
