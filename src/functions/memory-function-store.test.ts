import { describeFunctionStore } from '../../test/state/describe-function-store.js';
import { MemoryRuntimeStore } from '../state/memory-runtime-store.js';

describeFunctionStore('memory', async () => {
  const store = new MemoryRuntimeStore();
  return { store, peer: store, cleanup: () => store.close() };
});
