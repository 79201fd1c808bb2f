/**
 * What the shared store suites have in common: a fixture per test (a fresh,
 * empty store, on Redis under a unique key prefix, and its cleanup), and the
 * code and details a rejected call carries.
 */
import { test, type TestAPI } from 'vitest';
import { isUhlpError } from '../../src/shared/errors.js';

export interface StoreFixture<T> {
  store: T;
  cleanup: () => Promise<void>;
}

/** Makes a fresh, empty store for one test. */
export type MakeStore<T> = () => Promise<StoreFixture<T>>;

/** `it` with a `store` of its own in each test's context: made before the test, cleaned up after it. */
export function storeTest<T>(makeStore: MakeStore<T>): TestAPI<{ store: T }> {
  return test.extend<{ store: T }>({
    // The empty pattern is how vitest reads that the fixture depends on no other.
    store: async ({}, use: (store: T) => Promise<void>) => {
      const fixture = await makeStore();
      try {
        await use(fixture.store);
      } finally {
        await fixture.cleanup();
      }
    },
  });
}

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
