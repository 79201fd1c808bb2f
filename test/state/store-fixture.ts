/**
 * What the shared store suites have in common: a fixture per test (a fresh,
 * empty store, on Redis under a unique key prefix, and its cleanup), and the
 * code and details a rejected call carries.
 */
import { isUhlpError } from '../../src/shared/errors.js';

export interface StoreFixture<T> {
  store: T;
  cleanup: () => Promise<void>;
}

/** Makes a fresh, empty store for one test. */
export type MakeStore<T> = () => Promise<StoreFixture<T>>;

/** One concern of the stores `makeStore` makes, with the same cleanup. */
export function concernOf<T, C>(makeStore: MakeStore<T>, pick: (store: T) => C): MakeStore<C> {
  return async () => {
    const fixture = await makeStore();
    return { store: pick(fixture.store), cleanup: fixture.cleanup };
  };
}

/** The code and details of the UhlpError `promise` rejects with. */
export async function codeOf(promise: Promise<unknown>): Promise<{ code: string; details: unknown }> {
  try {
    await promise;
  } catch (error) {
    if (isUhlpError(error)) return { code: error.code, details: error.details };
    throw error;
  }
  throw new Error('expected a rejection');
}
