/**
 * GitDefinitionStore against real repositories in temp dirs: reads from the
 * object store at a revision, path refusals (.., absolute, symlinks), and state
 * diffs as single commits guarded by the expected base.
 */
import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isUhlpError } from '../../src/shared/errors.js';
import { GitDefinitionStore } from '../../src/apps/git/definition-store.js';
import { commitAll, git, initRepo, tempDir, writeFiles } from '../helpers/git-repo.js';

const AUTHOR = { name: 'Oracle Bot', email: 'oracle@uhlp.example' };

async function failure(promise: Promise<unknown>): Promise<{ code: string; field: unknown }> {
  try {
    await promise;
  } catch (error) {
    if (isUhlpError(error)) return { code: error.code, field: (error.details as { field?: unknown } | undefined)?.field };
    throw error;
  }
  throw new Error('expected a rejection');
}

describe('GitDefinitionStore', () => {
  let repo: string;
  let base: string;
  let store: GitDefinitionStore;

  beforeEach(async () => {
    repo = initRepo();
    writeFiles(repo, {
      'README.md': 'not definitions\n',
      'defs/apps/shop/app.yaml': 'kind: AppDefinition\nname: shop\n',
      'defs/apps/shop/scripts/price.js': 'export default () => 1;\n',
      'defs/apps/shop/run.sh': '#!/bin/sh\n',
      'defs/apps/other/app.yaml': 'name: other\n',
      'defs/apps/shop/linked': { symlink: '../other' },
      'defs/apps/shop/alias.yaml': { symlink: 'app.yaml' },
      'defs/apps/evil': { symlink: 'shop' },
    });
    chmodSync(path.join(repo, 'defs/apps/shop/run.sh'), 0o755);
    base = commitAll(repo, 'initial definitions');
    store = await GitDefinitionStore.open({ dir: path.join(repo, 'defs') });
  });

  afterEach(() => {
    rmSync(repo, { recursive: true, force: true });
  });

  describe('readFile', () => {
    it('reads from the commit, not the working tree, under the definitions prefix', async () => {
      expect(store.prefix).toBe('defs');
      writeFileSync(path.join(repo, 'defs/apps/shop/app.yaml'), 'uncommitted edit\n');
      const file = await store.readFile('shop', 'app.yaml');
      expect(file).toMatchObject({ appId: 'shop', path: 'app.yaml', commit: base, content: 'kind: AppDefinition\nname: shop\n' });
      expect((await store.readFile('shop', './scripts/../scripts/price.js')).path).toBe('scripts/price.js');
    });

    it('reads at an older revision, and refuses revisions that are not commits', async () => {
      writeFiles(repo, { 'defs/apps/shop/app.yaml': 'name: shop v2\n' });
      const second = commitAll(repo, 'v2');
      expect((await store.readFile('shop', 'app.yaml')).content).toBe('name: shop v2\n');
      expect((await store.readFile('shop', 'app.yaml', base)).content).toBe('kind: AppDefinition\nname: shop\n');
      expect((await store.readFile('shop', 'app.yaml', 'HEAD~1')).commit).toBe(base);
      expect(await store.head()).toBe(second);
      for (const rev of ['nope', '--output=/tmp/x', 'HEAD~9']) {
        expect((await failure(store.readFile('shop', 'app.yaml', rev))).code).toBe('UHLP_DEFINITION_REVISION_NOT_FOUND');
      }
    });

    it.each([
      ['../other/app.yaml', 'leaves the app directory'],
      ['scripts/../../other/app.yaml', 'leaves the app directory through a detour'],
      ['/etc/passwd', 'absolute'],
      ['', 'empty'],
      ['.', 'the app directory itself'],
      ['.git/config', 'a .git entry'],
      ['scripts\\price.js', 'a backslash'],
      ['linked/app.yaml', 'through a symlinked directory'],
      ['alias.yaml', 'a symlink itself'],
    ])('refuses %j (%s) with UHLP_DEFINITION_PATH_REFUSED', async (bad) => {
      expect(await failure(store.readFile('shop', bad))).toEqual({ code: 'UHLP_DEFINITION_PATH_REFUSED', field: 'path' });
    });

    it('refuses an app directory that is a symlink, and app ids that are not names', async () => {
      expect((await failure(store.readFile('evil', 'app.yaml'))).code).toBe('UHLP_DEFINITION_PATH_REFUSED');
      expect(await failure(store.readFile('../defs', 'app.yaml'))).toEqual({ code: 'UHLP_DEFINITION_PATH_REFUSED', field: 'appId' });
    });

    it('answers UHLP_DEFINITION_FILE_NOT_FOUND for missing files and directories', async () => {
      for (const missing of ['nope.yaml', 'scripts', 'app.yaml/x', 'scripts/nope/deeper.js']) {
        expect((await failure(store.readFile('shop', missing))).code).toBe('UHLP_DEFINITION_FILE_NOT_FOUND');
      }
    });

    it('lists the regular files of an app', async () => {
      expect(await store.listFiles('shop')).toEqual(['app.yaml', 'run.sh', 'scripts/price.js']);
      expect(await store.listFiles('ghost')).toEqual([]);
    });
  });

  describe('applyStateDiff with changes', () => {
    it('writes and deletes files as one commit with author and message, and moves the working tree', async () => {
      const result = await store.applyStateDiff({
        appId: 'shop',
        expectedBase: base,
        author: AUTHOR,
        message: 'oracle: promote price to JIT',
        changes: [
          { path: 'app.yaml', content: 'name: shop\nhandler: JIT\n' },
          { path: 'scripts/new/jit.js', content: 'export default () => 2;\n' },
          { path: 'run.sh', content: '#!/bin/sh\necho hi\n' },
          { path: 'scripts/price.js', delete: true },
        ],
      });
      expect(result).toMatchObject({ previous: base, committed: true, worktreeSynced: true, changedPaths: ['app.yaml', 'run.sh', 'scripts/new/jit.js', 'scripts/price.js'] });
      expect(git(repo, 'rev-parse', 'HEAD')).toBe(result.commit);
      expect(git(repo, 'rev-list', '--count', `${base}..HEAD`)).toBe('1');
      expect(git(repo, 'log', '-1', '--format=%an <%ae>|%s|%P')).toBe(`Oracle Bot <oracle@uhlp.example>|oracle: promote price to JIT|${base}`);
      expect((await store.readFile('shop', 'app.yaml')).content).toBe('name: shop\nhandler: JIT\n');
      expect(await store.listFiles('shop')).toEqual(['app.yaml', 'run.sh', 'scripts/new/jit.js']);
      // The executable bit of an existing file is kept.
      expect(git(repo, 'ls-tree', 'HEAD', '--', 'defs/apps/shop/run.sh')).toMatch(/^100755 /);
      expect(readFileSync(path.join(repo, 'defs/apps/shop/scripts/new/jit.js'), 'utf8')).toBe('export default () => 2;\n');
      expect(git(repo, 'status', '--porcelain')).toBe('');
    });

    it('refuses a diff whose base is no longer HEAD (409), leaving HEAD alone', async () => {
      writeFiles(repo, { 'defs/apps/shop/app.yaml': 'moved on\n' });
      const moved = commitAll(repo, 'someone else');
      const refused = await failure(store.applyStateDiff({ appId: 'shop', expectedBase: base, author: AUTHOR, message: 'late', changes: [{ path: 'x', content: 'y' }] }));
      expect(refused).toEqual({ code: 'UHLP_DEFINITION_BASE_MISMATCH', field: 'expectedBase' });
      expect(git(repo, 'rev-parse', 'HEAD')).toBe(moved);
    });

    it('serializes concurrent diffs: one wins per base, the others get 409', async () => {
      const attempts = await Promise.allSettled(
        Array.from({ length: 5 }, (_, i) =>
          store.applyStateDiff({ appId: 'shop', expectedBase: base, author: AUTHOR, message: `diff ${i}`, changes: [{ path: `f${i}.txt`, content: `${i}` }] }),
        ),
      );
      const won = attempts.filter((a) => a.status === 'fulfilled');
      expect(won).toHaveLength(1);
      for (const lost of attempts.filter((a) => a.status === 'rejected')) {
        expect((lost as PromiseRejectedResult).reason).toMatchObject({ code: 'UHLP_DEFINITION_BASE_MISMATCH' });
      }
      expect(git(repo, 'rev-list', '--count', `${base}..HEAD`)).toBe('1');
    });

    it.each<[string, object, string, string]>([
      ['a path leaving the app', { changes: [{ path: '../other/app.yaml', content: 'x' }] }, 'UHLP_DEFINITION_PATH_REFUSED', 'changes[0].path'],
      ['a write through a symlink', { changes: [{ path: 'linked/app.yaml', content: 'x' }] }, 'UHLP_DEFINITION_PATH_REFUSED', 'changes[0].path'],
      ['a write onto a symlink', { changes: [{ path: 'alias.yaml', content: 'x' }] }, 'UHLP_DEFINITION_PATH_REFUSED', 'changes[0].path'],
      ['a delete of a missing file', { changes: [{ path: 'ghost.txt', delete: true }] }, 'UHLP_DEFINITION_DIFF_INVALID', 'changes[0].path'],
      ['a write over a directory', { changes: [{ path: 'scripts', content: 'x' }] }, 'UHLP_DEFINITION_DIFF_INVALID', 'changes[0].path'],
      ['an author without e-mail', { author: { name: 'x', email: 'nope' } }, 'UHLP_DEFINITION_DIFF_INVALID', 'author.email'],
      ['an empty message', { message: ' ' }, 'UHLP_DEFINITION_DIFF_INVALID', 'message'],
      ['both changes and a diff', { unifiedDiff: '--- a/x\n+++ b/x\n' }, 'UHLP_DEFINITION_DIFF_INVALID', 'changes'],
      ['an abbreviated base', { expectedBase: 'abc123' }, 'UHLP_DEFINITION_DIFF_INVALID', 'expectedBase'],
      ['a symlinked app directory', { appId: 'evil' }, 'UHLP_DEFINITION_PATH_REFUSED', 'changes[0].path'],
    ])('refuses %s', async (_case, override, code, field) => {
      const input = { appId: 'shop', expectedBase: base, author: AUTHOR, message: 'm', changes: [{ path: 'ok.txt', content: 'x' }], ...override };
      expect(await failure(store.applyStateDiff(input))).toEqual({ code, field });
      expect(git(repo, 'rev-parse', 'HEAD')).toBe(base);
    });

    it('makes no commit when nothing changes', async () => {
      const result = await store.applyStateDiff({ appId: 'shop', expectedBase: base, author: AUTHOR, message: 'same', changes: [{ path: 'app.yaml', content: 'kind: AppDefinition\nname: shop\n' }] });
      expect(result).toMatchObject({ commit: base, committed: false, changedPaths: [] });
    });

    it('commits even when local edits keep the working tree from following, and says so', async () => {
      writeFileSync(path.join(repo, 'defs/apps/shop/app.yaml'), 'local edit\n');
      const result = await store.applyStateDiff({ appId: 'shop', expectedBase: base, author: AUTHOR, message: 'm', changes: [{ path: 'app.yaml', content: 'committed\n' }] });
      expect(result).toMatchObject({ committed: true, worktreeSynced: false });
      expect((await store.readFile('shop', 'app.yaml')).content).toBe('committed\n');
      expect(readFileSync(path.join(repo, 'defs/apps/shop/app.yaml'), 'utf8')).toBe('local edit\n');
    });
  });

  describe('applyStateDiff with a unified diff', () => {
    const gitDiff = [
      'diff --git a/app.yaml b/app.yaml',
      '--- a/app.yaml',
      '+++ b/app.yaml',
      '@@ -1,2 +1,3 @@',
      ' kind: AppDefinition',
      ' name: shop',
      '+handler: JIT',
      'diff --git a/notes.md b/notes.md',
      'new file mode 100644',
      '--- /dev/null',
      '+++ b/notes.md',
      '@@ -0,0 +1 @@',
      '+hello',
      'diff --git a/scripts/price.js b/scripts/price.js',
      'deleted file mode 100644',
      '--- a/scripts/price.js',
      '+++ /dev/null',
      '@@ -1 +0,0 @@',
      '-export default () => 1;',
      '',
    ].join('\n');

    it('applies a git diff as one commit', async () => {
      const result = await store.applyStateDiff({ appId: 'shop', expectedBase: base, author: AUTHOR, message: 'diff', unifiedDiff: gitDiff });
      expect(result.changedPaths).toEqual(['app.yaml', 'notes.md', 'scripts/price.js']);
      expect((await store.readFile('shop', 'app.yaml')).content).toBe('kind: AppDefinition\nname: shop\nhandler: JIT\n');
      expect((await store.readFile('shop', 'notes.md')).content).toBe('hello\n');
      expect((await failure(store.readFile('shop', 'scripts/price.js'))).code).toBe('UHLP_DEFINITION_FILE_NOT_FOUND');
      expect(git(repo, 'rev-list', '--count', `${base}..HEAD`)).toBe('1');
    });

    it('applies a plain diff -u without a/ b/ prefixes', async () => {
      const plain = '--- app.yaml\t2026-11-22 00:00:00\n+++ app.yaml\t2026-11-22 00:00:01\n@@ -1,2 +1,2 @@\n kind: AppDefinition\n-name: shop\n+name: shop2\n';
      await store.applyStateDiff({ appId: 'shop', expectedBase: base, author: AUTHOR, message: 'plain', unifiedDiff: plain });
      expect((await store.readFile('shop', 'app.yaml')).content).toBe('kind: AppDefinition\nname: shop2\n');
    });

    it.each([
      ['a path leaving the app', '--- a/../other/app.yaml\n+++ b/../other/app.yaml\n@@ -1 +1 @@\n-name: other\n+name: pwned\n', 'UHLP_DEFINITION_PATH_REFUSED'],
      ['an absolute path', '--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n', 'UHLP_DEFINITION_PATH_REFUSED'],
      ['a new symlink', 'diff --git a/ln b/ln\nnew file mode 120000\n--- /dev/null\n+++ b/ln\n@@ -0,0 +1 @@\n+../../..\n\\ No newline at end of file\n', 'UHLP_DEFINITION_PATH_REFUSED'],
      ['a change through a symlinked directory', 'diff --git a/linked/app.yaml b/linked/app.yaml\n--- a/linked/app.yaml\n+++ b/linked/app.yaml\n@@ -1 +1 @@\n-name: other\n+name: pwned\n', 'UHLP_DEFINITION_PATH_REFUSED'],
      ['a hunk that does not apply', '--- a/app.yaml\n+++ b/app.yaml\n@@ -1 +1 @@\n-not there\n+x\n', 'UHLP_DEFINITION_DIFF_INVALID'],
      ['no file headers', 'just text\n', 'UHLP_DEFINITION_DIFF_INVALID'],
    ])('refuses %s', async (_case, diff, code) => {
      const result = await failure(store.applyStateDiff({ appId: 'shop', expectedBase: base, author: AUTHOR, message: 'm', unifiedDiff: diff }));
      expect(result.code).toBe(code);
      expect(git(repo, 'rev-parse', 'HEAD')).toBe(base);
      expect(git(repo, 'show', 'HEAD:defs/apps/other/app.yaml')).toBe('name: other');
    });
  });

  it('works on a bare repository and on a repository whose definitions are at the top', async () => {
    const bare = tempDir('bare');
    git(bare, 'clone', '-q', '--bare', repo, '.');
    const bareStore = await GitDefinitionStore.open({ dir: bare, appsDir: 'defs/apps' });
    const result = await bareStore.applyStateDiff({ appId: 'shop', expectedBase: base, author: AUTHOR, message: 'bare', changes: [{ path: 'app.yaml', content: 'bare\n' }] });
    expect(git(bare, 'rev-parse', 'HEAD')).toBe(result.commit);
    expect((await bareStore.readFile('shop', 'app.yaml')).content).toBe('bare\n');
    rmSync(bare, { recursive: true, force: true });

    const top = await GitDefinitionStore.open({ dir: repo, appsDir: 'defs/apps' });
    expect(top.prefix).toBe('');
    expect((await top.readFile('shop', 'app.yaml')).content).toBe('kind: AppDefinition\nname: shop\n');
  });

  it('refuses a directory that is not a repository', async () => {
    const plain = tempDir('plain');
    expect((await failure(GitDefinitionStore.open({ dir: plain }))).code).toBe('UHLP_DEFINITIONS_UNREADABLE');
    rmSync(plain, { recursive: true, force: true });
  });
});
