import { describeLlmGenerate } from '../../../test/mcp/describe-llm-generate.js';
import { MemoryRuntimeStore } from '../../state/memory-runtime-store.js';

describeLlmGenerate('memory', async () => {
  const store = new MemoryRuntimeStore();
  return { store, cleanup: () => store.close() };
});
