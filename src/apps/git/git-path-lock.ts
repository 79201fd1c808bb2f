/**
 * An in-process lock per repository, so that concurrent state diffs on one
 * repository run one after another (the compare-and-swap of the ref update
 * guards against other processes). Keyed by the repository's top-level path, so
 * two stores opened on the same repository share it.
 */
const tails = new Map<string, Promise<void>>();

export async function withRepositoryLock<T>(repository: string, task: () => Promise<T>): Promise<T> {
  const previous = tails.get(repository) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  const tail = previous.then(() => mine);
  tails.set(repository, tail);
  await previous;
  try {
    return await task();
  } finally {
    release();
    if (tails.get(repository) === tail) tails.delete(repository);
  }
}
