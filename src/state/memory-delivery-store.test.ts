import { describeDeliveryStore } from '../../test/state/describe-delivery-store.js';
import { MemoryDeliveryStore } from './memory-delivery-store.js';

describeDeliveryStore('memory', async () => {
  const store = new MemoryDeliveryStore();
  return { store, cleanup: () => store.close() };
});
