/**
 * HeadWatcher against real repositories: local commits (by git and by a state
 * diff) and commits pulled from a bare remote over file://.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GitDefinitionStore } from '../../src/apps/git/definition-store.js';
import { HeadWatcher, type HeadChange } from '../../src/apps/git/head-watcher.js';
import { commitAll, git, initRepo, tempDir, writeFiles } from '../helpers/git-repo.js';
import { waitFor } from '../helpers/wait-for.js';

describe('HeadWatcher', () => {
  const cleanups: Array<() => Promise<void> | void> = [];

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  function watch(dir: string, extra: Partial<ConstructorParameters<typeof HeadWatcher>[0]> = {}): { watcher: HeadWatcher; changes: HeadChange[]; errors: Error[] } {
    const changes: HeadChange[] = [];
    const errors: Error[] = [];
    const watcher = new HeadWatcher({ dir, intervalMs: 20, onChange: (c) => void changes.push(c), onError: (e) => void errors.push(e), ...extra });
    cleanups.push(() => watcher.stop());
    return { watcher, changes, errors };
  }

  function repoWithApp(): { repo: string; first: string } {
    const repo = initRepo();
    cleanups.push(() => rmSync(repo, { recursive: true, force: true }));
    writeFiles(repo, { 'apps/shop/app.yaml': 'name: shop\n' });
    return { repo, first: commitAll(repo, 'first') };
  }

  it('reports a local commit, and a state-diff commit, once each', async () => {
    const { repo, first } = repoWithApp();
    const { watcher, changes } = watch(repo);
    expect(await watcher.start()).toBe(first);

    writeFiles(repo, { 'apps/shop/app.yaml': 'name: shop v2\n' });
    const second = commitAll(repo, 'second');
    await waitFor(() => changes.length === 1, { what: 'the local commit' });
    expect(changes[0]).toEqual({ previous: first, current: second });

    const store = await GitDefinitionStore.open({ dir: repo });
    const diff = await store.applyStateDiff({ appId: 'shop', expectedBase: second, author: { name: 'a', email: 'a@b.c' }, message: 'diff', changes: [{ path: 'x.txt', content: 'x' }] });
    await waitFor(() => changes.length === 2, { what: 'the state-diff commit' });
    expect(changes[1]).toEqual({ previous: second, current: diff.commit });
    expect(watcher.current).toBe(diff.commit);
  });

  it('pulls commits from a bare remote over file:// on its interval', async () => {
    const remote = tempDir('remote');
    cleanups.push(() => rmSync(remote, { recursive: true, force: true }));
    git(remote, 'init', '-q', '--bare', '-b', 'main');
    const { repo: author } = repoWithApp();
    git(author, 'push', '-q', `file://${remote}`, 'main');

    const clone = tempDir('clone');
    cleanups.push(() => rmSync(clone, { recursive: true, force: true }));
    git(clone, 'clone', '-q', `file://${remote}`, '.');
    const { watcher, changes, errors } = watch(clone, { pull: { remote: 'origin', branch: 'main', intervalMs: 20 } });
    const start = await watcher.start();

    writeFiles(author, { 'apps/shop/app.yaml': 'name: shop from remote\n' });
    const pushed = commitAll(author, 'remote change');
    git(author, 'push', '-q', `file://${remote}`, 'main');

    await waitFor(() => changes.length === 1, { what: 'the pulled commit', timeoutMs: 10_000 });
    expect(changes[0]).toEqual({ previous: start, current: pushed });
    expect(errors).toEqual([]);
    const store = await GitDefinitionStore.open({ dir: clone });
    expect((await store.readFile('shop', 'app.yaml')).content).toBe('name: shop from remote\n');
  });

  it('reports a failing pull and keeps watching', async () => {
    const { repo } = repoWithApp();
    const { watcher, changes, errors } = watch(repo, { pull: { remote: `file://${path.join(repo, 'no-such-remote.git')}`, intervalMs: 20 } });
    await watcher.start();
    await waitFor(() => errors.length >= 2, { what: 'pull errors' });
    writeFiles(repo, { 'apps/shop/app.yaml': 'still watched\n' });
    const next = commitAll(repo, 'after errors');
    await waitFor(() => changes.some((c) => c.current === next), { what: 'the commit after errors' });
  });

  it('awaits onChange before polling again, reports a throwing onChange, and stops', async () => {
    const { repo } = repoWithApp();
    let inside = 0;
    let overlapped = false;
    const seen: string[] = [];
    const { watcher, errors } = watch(repo, {
      onChange: async (change) => {
        inside += 1;
        if (inside > 1) overlapped = true;
        seen.push(change.current);
        await waitFor(() => true);
        inside -= 1;
        if (seen.length === 1) throw new Error('reload failed');
      },
    });
    await watcher.start();
    for (let i = 0; i < 3; i++) {
      writeFiles(repo, { 'apps/shop/app.yaml': `v${i}\n` });
      const commit = commitAll(repo, `v${i}`);
      await waitFor(() => seen.includes(commit), { what: `commit v${i}` });
    }
    expect(overlapped).toBe(false);
    expect(errors.map((e) => e.message)).toEqual(['reload failed']);

    await watcher.stop();
    const count = seen.length;
    // A second, running watcher with the same interval sees the next commit; the stopped one must not.
    const witness = watch(repo);
    await witness.watcher.start();
    writeFiles(repo, { 'apps/shop/app.yaml': 'after stop\n' });
    const after = commitAll(repo, 'after stop');
    await waitFor(() => witness.changes.some((c) => c.current === after), { what: 'the witness to see the commit' });
    expect(seen.length).toBe(count);
    expect(await watcher.checkNow()).toBe(after);
  });

  it('refuses a remote or branch that git pull would read as an option', () => {
    for (const pull of [{ remote: '--upload-pack=touch /tmp/uhlp-pwned' }, { remote: 'origin', branch: '-uoption' }]) {
      expect(() => new HeadWatcher({ dir: '.', onChange: () => {}, pull })).toThrow(/not a remote or branch name/);
    }
  });

  it('fails to start on a directory that is not a repository', async () => {
    const plain = tempDir('plain');
    cleanups.push(() => rmSync(plain, { recursive: true, force: true }));
    const { watcher } = watch(plain);
    await expect(watcher.start()).rejects.toThrow();
  });
});
