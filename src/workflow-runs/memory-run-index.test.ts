import { describeRunIndex, SUITE_TTL_MS } from '../../test/state/describe-run-index.js';
import { MemoryRunIndex } from './memory-run-index.js';

describeRunIndex('memory', async (now) => {
  const index = new MemoryRunIndex({ ttlMs: SUITE_TTL_MS, now });
  return { index, advance: () => {}, cleanup: () => index.close() };
});
