/**
 * A test's own Redis calls while a topology replaces a node or moves a slot:
 * for a moment a node answers `CLUSTERDOWN` (it has not yet heard of the
 * replica promoted), `TRYAGAIN` (a multi-key command meets a half-moved slot),
 * `MASTERDOWN`/`LOADING`, or the connection is refused or cut. Those calls are
 * tried again, for a bounded time; any other error is the test's answer.
 */

/** Whether `error` is a node being replaced or a slot moving, not an answer. */
export function isPassingRedisError(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return /^(CLUSTERDOWN|TRYAGAIN|MASTERDOWN|LOADING)\b/.test(message) || /ECONNREFUSED|ECONNRESET|EPIPE|Connection is closed|Stream isn't writeable|All sentinels are unreachable|Failed to refresh slots cache/.test(message);
}

/** Runs `call` until it answers or fails with an error that is not passing; passing ones for at most `timeoutMs`. */
export async function retryPassing<T>(call: () => Promise<T>, timeoutMs = 20_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (!isPassingRedisError(error) || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }
}
