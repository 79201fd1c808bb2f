import { describeDeliveryStore } from '../../test/state/describe-delivery-store.js';
import { createRuntimeStore } from './create-runtime-store.js';
import { MemoryDeliveryStore } from './memory-delivery-store.js';

describeDeliveryStore('memory', async () => {
  // The runtime store's records, as start-core gives them: ack keeps answers there.
  const runtime = await createRuntimeStore();
  const store = new MemoryDeliveryStore({ idempotency: runtime.idempotency });
  return {
    store,
    records: runtime.idempotency,
    cleanup: async () => {
      await store.close();
      await runtime.close();
    },
  };
});
