/** The Redis the integration tests use: UHLP_TEST_REDIS_URL, else a local one started by scripts/test-env.sh. */
export const TEST_REDIS_URL = process.env.UHLP_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

let counter = 0;

/** A key prefix no other test (or test run) uses. */
export function uniqueKeyPrefix(name: string): string {
  counter += 1;
  return `uhlp-test:${name}:${process.pid}:${Date.now().toString(36)}:${counter}:`;
}
