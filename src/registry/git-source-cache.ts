/**
 * Bare clones of the Git repositories that Kubernetes apps name in
 * `spec.source.git`, one per URL under the data directory. A ref is fetched when
 * an app asks for it, so a new commit is picked up when the AppDefinition changes
 * (or its ref moves and the app is re-read).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { UhlpError } from '../errors.js';
import { runGit } from '../definitions/git-tree.js';

const FULL_COMMIT = /^[0-9a-f]{40}$/;

export class GitSourceCache {
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(private readonly root: string) {}

  /** The bare repository for a URL (created on first use). */
  repoDir(url: string): string {
    return path.join(this.root, `${createHash('sha1').update(url).digest('hex')}.git`);
  }

  /** Fetches `ref` of `url` and returns the commit it names. */
  async resolve(url: string, ref: string): Promise<string> {
    const dir = this.repoDir(url);
    return this.serialized(dir, async () => {
      if (!existsSync(dir)) {
        await mkdir(dir, { recursive: true });
        await runGit(dir, ['init', '--quiet', '--bare']);
      }
      if (FULL_COMMIT.test(ref)) {
        const known = await runGit(dir, ['cat-file', '-e', `${ref}^{commit}`]).then(
          () => true,
          () => false,
        );
        if (known) return ref;
      }
      try {
        await runGit(dir, ['fetch', '--quiet', '--no-tags', url, ref]);
        return (await runGit(dir, ['rev-parse', 'FETCH_HEAD^{commit}'])).toString('utf8').trim();
      } catch (error) {
        throw new UhlpError('UHLP_DEFINITIONS_UNREADABLE', `cannot fetch ${ref} of ${url}: ${(error as Error).message}`, { url, ref });
      }
    });
  }

  private serialized<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(key) ?? Promise.resolve();
    const next = previous.then(task, task);
    this.locks.set(key, next.catch(() => undefined));
    return next;
  }
}
