/**
 * Reads the commit HEAD points at from the repository's files: HEAD, then the
 * loose ref or packed-refs line it names. The core polls HEAD every second, and
 * spawning `git` for that stalls its event loop for milliseconds (a fork of a
 * large process); reading two small files does not. Anything this reader does
 * not understand (a symbolic ref chain, a reftable repository) is left to
 * `git rev-parse`, which the caller falls back to.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

const COMMIT = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

export class HeadRefReader {
  /**
   * @param gitDir the repository's git directory (`git rev-parse --absolute-git-dir`)
   * @param commonDir where shared refs live (`git rev-parse --git-common-dir`; the git dir outside worktrees)
   */
  constructor(
    private readonly gitDir: string,
    private readonly commonDir: string,
  ) {}

  /** The commit id, or undefined when the files do not say it plainly. */
  async read(): Promise<string | undefined> {
    const head = (await readFile(path.join(this.gitDir, 'HEAD'), 'utf8')).trim();
    if (COMMIT.test(head)) return head;
    const ref = /^ref: (refs\/[^\s]+)$/.exec(head)?.[1];
    if (ref === undefined || ref.split('/').includes('..')) return undefined;
    for (const dir of new Set([this.gitDir, this.commonDir])) {
      const loose = await readOptional(path.join(dir, ref));
      if (loose !== undefined) return COMMIT.test(loose.trim()) ? loose.trim() : undefined;
    }
    const packed = await readOptional(path.join(this.commonDir, 'packed-refs'));
    for (const line of packed?.split('\n') ?? []) {
      const [commit, name] = line.trim().split(' ');
      if (name === ref && commit !== undefined && COMMIT.test(commit)) return commit;
    }
    return undefined;
  }
}

async function readOptional(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw error;
  }
}
