/**
 * Polls `condition` until it holds or the deadline passes; tests wait on state, never on sleeps.
 * A condition that throws counts as not holding yet (a service still coming up); the last
 * error is named if the deadline passes.
 */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  options: WaitOptions = {},
): Promise<void> {
  await waitForValue(async () => (await condition()) || undefined, options);
}

export interface WaitOptions {
  /** @defaultValue 5000 */
  timeoutMs?: number;
  /** Time between two looks. @defaultValue 10 */
  intervalMs?: number;
  /** What is awaited, for the failure's message. @defaultValue `'condition'` */
  what?: string;
}

/**
 * Polls `check` until it answers a value other than undefined or false, and answers that value;
 * like `waitFor`, a check that throws has not answered yet.
 */
export async function waitForValue<T>(check: () => T | undefined | false | Promise<T | undefined | false>, options: WaitOptions = {}): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 5_000);
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const reason = lastError instanceof Error ? `; last error: ${lastError.message}` : lastError !== undefined ? `; last error: ${String(lastError)}` : '';
      throw new Error(`timed out waiting for ${options.what ?? 'condition'}${reason}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 10));
  }
}
