/** Polls `condition` until it returns a truthy value or the deadline passes; tests wait on conditions, never on sleeps. */
export async function waitFor<T>(condition: () => T | Promise<T>, options: { timeoutMs?: number; intervalMs?: number; what?: string } = {}): Promise<NonNullable<T>> {
  const deadline = Date.now() + (options.timeoutMs ?? 5000);
  let last: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      const reason = last instanceof Error ? `; last error: ${last.message}` : '';
      throw new Error(`timed out waiting for ${options.what ?? 'condition'}${reason}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 10));
  }
}
