/**
 * HeadRefReader against real repositories: what it reads from the files must be
 * what `git rev-parse HEAD` says, for loose and packed refs, a detached HEAD, a
 * worktree, and a branch that points nowhere yet.
 */
import { rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HeadRefReader } from '../../src/apps/git/head-ref-reader.js';
import { commitAll, git, initRepo, writeFiles } from '../helpers/git-repo.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function readerFor(dir: string): HeadRefReader {
  const [gitDir, commonDir] = git(dir, 'rev-parse', '--absolute-git-dir', '--git-common-dir').trim().split('\n');
  return new HeadRefReader(gitDir!, path.resolve(dir, commonDir!));
}

const revParse = (dir: string): string => git(dir, 'rev-parse', 'HEAD').trim();

describe('HeadRefReader', () => {
  it('reads loose refs, packed refs and a detached HEAD as git does', async () => {
    const repo = initRepo();
    dirs.push(repo);
    const reader = readerFor(repo);
    expect(await reader.read()).toBeUndefined();
    writeFiles(repo, { 'a.txt': '1' });
    const first = commitAll(repo, 'first');
    expect(await reader.read()).toBe(first);
    git(repo, 'pack-refs', '--all');
    expect(await reader.read()).toBe(revParse(repo));
    writeFiles(repo, { 'a.txt': '2' });
    const second = commitAll(repo, 'second');
    expect(await reader.read()).toBe(second);
    git(repo, 'checkout', '--quiet', '--detach', first);
    expect(await reader.read()).toBe(first);
  });

  it('reads the HEAD of a worktree, not of the main checkout', async () => {
    const repo = initRepo();
    dirs.push(repo);
    writeFiles(repo, { 'a.txt': '1' });
    const first = commitAll(repo, 'first');
    const worktree = path.join(os.tmpdir(), `uhlp-wt-${process.pid}-${Date.now()}`);
    dirs.push(worktree);
    git(repo, 'worktree', 'add', '--quiet', '-b', 'side', worktree);
    writeFiles(worktree, { 'b.txt': '2' });
    const side = commitAll(worktree, 'side');
    expect(await readerFor(worktree).read()).toBe(side);
    expect(await readerFor(repo).read()).toBe(first);
  });
});
