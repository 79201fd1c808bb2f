/** Polls `condition` until it holds or the deadline passes; tests wait on state, never on sleeps. */
export async function waitFor(condition: () => boolean | Promise<boolean>, options: { timeoutMs?: number; what?: string } = {}): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 5_000);
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${options.what ?? 'condition'}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
