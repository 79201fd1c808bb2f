/**
 * An in-process lock per repository, so that concurrent state diffs on one
 * repository run one after another (the compare-and-swap of the ref update
 * guards against other processes). Keyed by the repository's top-level path, so
 * two stores opened on the same repository share it: one lock for the process.
 */
import { KeyedSemaphore } from '../../shared/keyed-semaphore.js';

const repositories = new KeyedSemaphore();

export function withRepositoryLock<T>(repository: string, task: () => Promise<T>): Promise<T> {
  return repositories.run(repository, task);
}
