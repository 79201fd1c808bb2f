/**
 * Definition state on Git (simple-git): files of an app's directory read from the
 * object store at a commit (never the working tree, which may hold uncommitted
 * edits), and state diffs applied as one commit with the caller's author and
 * message.
 *
 * A diff is built in a temporary index from the base commit, written as a tree,
 * committed, and published with `update-ref HEAD <new> <base>`: a compare-and-swap,
 * so a diff made against a commit that is no longer HEAD is refused (409) even
 * when another process moved HEAD. In a non-bare repository the working tree is
 * then moved to the new commit for the changed paths (`read-tree -m -u`).
 *
 * The definitions directory may be a subdirectory of the repository; app
 * directories are `<dir>/<appsDir>/<appId>` and paths are taken under that prefix
 * (`git rev-parse --show-prefix`).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { simpleGit, type SimpleGit } from 'simple-git';
import { UhlpError } from '../../shared/errors.js';
import { appRootPath, checkAppId, normalizeAppPath } from '../definition-paths.js';
import { gitEnv } from './git-env.js';
import { withRepositoryLock } from './git-path-lock.js';

export interface DefinitionStoreOptions {
  /** The definitions directory: a Git work tree, a subdirectory of one, or a bare repository. */
  dir: string;
  /** Directory under `dir` with one directory per app. @defaultValue `apps` */
  appsDir?: string;
  /** Committer of state-diff commits. @defaultValue the author of each diff */
  committer?: GitIdentity;
}

export interface GitIdentity {
  name: string;
  email: string;
}

export interface DefinitionFile {
  appId: string;
  /** Normalized app-relative path. */
  path: string;
  /** The commit the file was read at. */
  commit: string;
  blob: string;
  content: string;
}

export type StateChange = { path: string; content: string } | { path: string; delete: true };

export interface StateDiffInput {
  appId: string;
  /** The commit the diff was made against; it must still be HEAD. */
  expectedBase: string;
  author: GitIdentity;
  message: string;
  /** File writes and deletes, app-relative. Give this or `unifiedDiff`. */
  changes?: StateChange[];
  /** A unified diff (git or plain `diff -u`) with app-relative paths. Give this or `changes`. */
  unifiedDiff?: string;
  /**
   * Called with every app-relative path the commit would change (written, added
   * or deleted, whatever form the change took) before anything is committed; a
   * throw refuses the whole diff. The caller's write policy.
   */
  authorize?: (appPath: string) => void;
  /**
   * Commit to this branch instead of HEAD: the commit's parent is
   * `expectedBase` (any commit), the branch is created or moved to it, and
   * neither HEAD nor the working tree moves (a suggestion for a human to
   * merge). @defaultValue none: the commit moves HEAD
   */
  branch?: string;
}

export interface AppliedStateDiff {
  /** The new HEAD; equals `previous` when the diff changed nothing (no commit is made). */
  commit: string;
  previous: string;
  committed: boolean;
  /** App-relative paths the commit changed. */
  changedPaths: string[];
  /** False when local edits in the working tree kept it from moving to the new commit (the commit stands). */
  worktreeSynced: boolean;
}

interface TreeEntry {
  mode: string;
  type: string;
  object: string;
  path: string;
}

const HEX_COMMIT = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
const SYMLINK_MODE = '120000';
/** Files kept by the read cache (oldest dropped first), and the largest one it keeps. */
const MAX_CACHED_FILES = 512;
const MAX_CACHED_FILE_CHARS = 256 * 1024;
const GITLINK_MODE = '160000';

export class GitDefinitionStore {
  private readonly files = new Map<string, DefinitionFile>();

  private constructor(
    /** The repository's top level (or the git dir of a bare repository). */
    readonly repository: string,
    /** Repository path of the definitions directory ('' at the top). */
    readonly prefix: string,
    readonly bare: boolean,
    private readonly appsDir: string,
    private readonly committer: GitIdentity | undefined,
  ) {}

  static async open(options: DefinitionStoreOptions): Promise<GitDefinitionStore> {
    const git = plainGit(options.dir);
    let bare: boolean;
    try {
      bare = (await git.raw(['rev-parse', '--is-bare-repository'])).trim() === 'true';
    } catch (error) {
      throw new UhlpError('UHLP_DEFINITIONS_UNREADABLE', `${options.dir} is not a Git repository: ${gitMessage(error)}`, { dir: options.dir }, { cause: error });
    }
    const repository = bare ? path.resolve(options.dir) : (await git.raw(['rev-parse', '--show-toplevel'])).trim();
    const prefix = bare ? '' : (await git.raw(['rev-parse', '--show-prefix'])).trim().replace(/\/$/, '');
    return new GitDefinitionStore(repository, prefix, bare, options.appsDir ?? 'apps', options.committer);
  }

  /** The commit HEAD points at. */
  async head(): Promise<string> {
    return this.resolveRevision('HEAD');
  }

  /** The full commit id a revision names, or `UHLP_DEFINITION_REVISION_NOT_FOUND`. */
  async resolveRevision(revision: string): Promise<string> {
    if (typeof revision !== 'string' || revision === '' || revision.startsWith('-') || /[\s\0]/.test(revision)) {
      throw new UhlpError('UHLP_DEFINITION_REVISION_NOT_FOUND', `revision "${String(revision).slice(0, 80)}" is not a revision name`, { field: 'rev' });
    }
    let commit = '';
    try {
      commit = (await this.git().raw(['rev-parse', '--verify', '--quiet', '--end-of-options', `${revision}^{commit}`])).trim();
    } catch {
      // Reported below: with --quiet, git fails without a message and simple-git may resolve empty.
    }
    if (!HEX_COMMIT.test(commit)) {
      throw new UhlpError('UHLP_DEFINITION_REVISION_NOT_FOUND', `revision "${revision}" is not a commit of the definitions repository`, { field: 'rev' });
    }
    return commit;
  }

  /** A file of an app's directory at `rev` (HEAD when omitted), from the object store. */
  async readFile(appId: string, filePath: string, rev = 'HEAD'): Promise<DefinitionFile> {
    const relative = normalizeAppPath(filePath);
    const root = appRootPath(this.prefix, this.appsDir, appId);
    // A commit never changes, so a file read at a full commit id is cached without asking Git again.
    const cached = HEX_COMMIT.test(rev) ? this.files.get(`${rev}\0${root}/${relative}`) : undefined;
    if (cached) return { ...cached };
    const commit = await this.resolveRevision(rev);
    const entry = await this.entryAt(commit, `${root}/${relative}`, 'path');
    if (!entry || entry.type !== 'blob') {
      throw new UhlpError('UHLP_DEFINITION_FILE_NOT_FOUND', `${relative} is not a file of app ${appId} at ${commit.slice(0, 12)}`, { field: 'path', appId, path: relative });
    }
    const content = await this.git().raw(['cat-file', 'blob', entry.object]);
    const file: DefinitionFile = { appId, path: relative, commit, blob: entry.object, content };
    if (content.length <= MAX_CACHED_FILE_CHARS) {
      if (this.files.size >= MAX_CACHED_FILES) this.files.delete(this.files.keys().next().value!);
      this.files.set(`${commit}\0${root}/${relative}`, file);
    }
    return { ...file };
  }

  /** App-relative paths of the regular files of an app's directory at `rev`, sorted. */
  async listFiles(appId: string, rev = 'HEAD'): Promise<string[]> {
    const root = appRootPath(this.prefix, this.appsDir, appId);
    const commit = await this.resolveRevision(rev);
    const rootEntry = await this.entryAt(commit, root, 'appId');
    if (!rootEntry) return [];
    if (rootEntry.type !== 'tree') throw new UhlpError('UHLP_DEFINITION_FILE_NOT_FOUND', `app ${appId} has no directory at ${commit.slice(0, 12)}`, { field: 'appId' });
    const entries = parseLsTree(await this.git().raw(['ls-tree', '-r', '-z', '--full-tree', commit, '--', `${root}/`]));
    return entries
      .filter((e) => e.type === 'blob' && (e.mode === '100644' || e.mode === '100755'))
      .map((e) => e.path.slice(root.length + 1))
      .sort();
  }

  /** Applies a set of writes and deletes, or a unified diff, to one app as one commit. */
  async applyStateDiff(input: StateDiffInput): Promise<AppliedStateDiff> {
    checkAppId(input.appId);
    checkIdentity(input.author, 'author');
    if (typeof input.message !== 'string' || input.message.trim() === '') throw diffInvalid('message', 'message must not be empty');
    if ((input.changes === undefined) === (input.unifiedDiff === undefined)) throw diffInvalid('changes', 'give exactly one of changes and unifiedDiff');
    if (typeof input.expectedBase !== 'string' || !HEX_COMMIT.test(input.expectedBase)) {
      throw diffInvalid('expectedBase', 'expectedBase must be a full commit id');
    }
    const root = appRootPath(this.prefix, this.appsDir, input.appId);
    const changes = input.changes?.map((change, i) => ({ ...change, path: normalizeAppPath(change.path, `changes[${i}].path`) }));
    if (changes && changes.length === 0) throw diffInvalid('changes', 'changes must not be empty');
    const diffPaths = input.unifiedDiff === undefined ? [] : checkDiffPaths(input.unifiedDiff);
    // Refused early on what the caller names; checked again below on what the commit would really change.
    for (const named of changes?.map((change) => change.path) ?? diffPaths) input.authorize?.(named);

    const branch = input.branch === undefined ? undefined : await this.checkBranch(input.branch);
    return withRepositoryLock(this.repository, async () => {
      const base = branch === undefined ? await this.head() : await this.resolveRevision(input.expectedBase);
      if (base !== input.expectedBase) throw baseMismatch(input.expectedBase, base);

      const scratch = await mkdtemp(path.join(os.tmpdir(), 'uhlp-diff-'));
      try {
        const index = this.git({ GIT_INDEX_FILE: path.join(scratch, 'index') });
        await index.raw(['read-tree', base]);
        if (changes) await this.stageChanges(index, base, root, changes, scratch);
        else {
          // git apply refuses symlinked paths too, but with a message, not our code.
          for (const diffPath of diffPaths) await this.entryAt(base, `${root}/${diffPath}`, 'unifiedDiff');
          await this.stageUnifiedDiff(index, root, input.unifiedDiff!, scratch);
        }

        const changed = await this.changedEntries(index, base, root);
        for (const repoPath of changed) input.authorize?.(repoPath.slice(root.length + 1));
        const tree = (await index.raw(['write-tree'])).trim();
        if (changed.length === 0) return { commit: base, previous: base, committed: false, changedPaths: [], worktreeSynced: true };

        const committer = this.committer ?? input.author;
        const commit = (
          await this.git({
            GIT_AUTHOR_NAME: input.author.name,
            GIT_AUTHOR_EMAIL: input.author.email,
            GIT_COMMITTER_NAME: committer.name,
            GIT_COMMITTER_EMAIL: committer.email,
          }).raw(['commit-tree', tree, '-p', base, '-m', input.message])
        ).trim();
        if (branch !== undefined) {
          await this.git().raw(['update-ref', '-m', `uhlp state diff: ${input.appId}`, `refs/heads/${branch}`, commit]);
          return { commit, previous: base, committed: true, changedPaths: changed.map((p) => p.slice(root.length + 1)).sort(), worktreeSynced: true };
        }
        try {
          await this.git().raw(['update-ref', '-m', `uhlp state diff: ${input.appId}`, 'HEAD', commit, base]);
        } catch (error) {
          // Another process moved HEAD between our read and the swap.
          throw baseMismatch(input.expectedBase, await this.head().catch(() => 'unknown'), error);
        }
        const worktreeSynced = await this.syncWorktree(base, commit);
        return { commit, previous: base, committed: true, changedPaths: changed.map((p) => p.slice(root.length + 1)).sort(), worktreeSynced };
      } finally {
        await rm(scratch, { recursive: true, force: true });
      }
    });
  }

  /** The branch name, when Git takes it as one (`git check-ref-format --branch`). */
  private async checkBranch(branch: string): Promise<string> {
    if (typeof branch !== 'string' || branch === '' || branch.startsWith('-') || /[\s\0]/.test(branch)) throw diffInvalid('branch', `"${String(branch).slice(0, 80)}" is not a branch name`);
    try {
      return (await this.git().raw(['check-ref-format', '--branch', branch])).trim();
    } catch (error) {
      throw diffInvalid('branch', `"${branch.slice(0, 80)}" is not a branch name`, error);
    }
  }

  /** The commit a branch points at, or undefined when there is no such branch. */
  async branchHead(branch: string): Promise<string | undefined> {
    const name = await this.checkBranch(branch);
    try {
      const commit = (await this.git().raw(['rev-parse', '--verify', '--quiet', `refs/heads/${name}`])).trim();
      return HEX_COMMIT.test(commit) ? commit : undefined;
    } catch {
      return undefined;
    }
  }

  private async stageChanges(index: SimpleGit, base: string, root: string, changes: StateChange[], scratch: string): Promise<void> {
    for (const [i, change] of changes.entries()) {
      const field = `changes[${i}].path`;
      const repoPath = `${root}/${change.path}`;
      const existing = await this.entryAt(base, repoPath, field);
      if ('delete' in change && change.delete === true) {
        if (!existing || existing.type !== 'blob') throw diffInvalid(field, `${change.path} does not exist, so it cannot be deleted`);
        await index.raw(['update-index', '--force-remove', '--', repoPath]);
        continue;
      }
      if (!('content' in change) || typeof change.content !== 'string') throw diffInvalid(`changes[${i}].content`, 'content must be a string');
      if (existing && existing.type !== 'blob') throw diffInvalid(field, `${change.path} is a directory`);
      const file = path.join(scratch, `blob-${i}`);
      await writeFile(file, change.content);
      // --no-filters: store the bytes given, whatever .gitattributes says.
      const blob = (await this.git().raw(['hash-object', '-w', '--no-filters', '--', file])).trim();
      const mode = existing?.mode === '100755' ? '100755' : '100644';
      try {
        await index.raw(['update-index', '--add', '--cacheinfo', `${mode},${blob},${repoPath}`]);
      } catch (error) {
        throw diffInvalid(field, `${change.path} cannot be written: ${gitMessage(error)}`, error);
      }
    }
  }

  private async stageUnifiedDiff(index: SimpleGit, root: string, diff: string, scratch: string): Promise<void> {
    const file = path.join(scratch, 'patch.diff');
    await writeFile(file, diff.endsWith('\n') ? diff : `${diff}\n`);
    const strip = diffHasGitPrefixes(diff) ? '-p1' : '-p0';
    try {
      await index.raw(['apply', '--cached', '--whitespace=nowarn', strip, `--directory=${root}`, '--', file]);
    } catch (error) {
      throw diffInvalid('unifiedDiff', `the diff does not apply: ${gitMessage(error)}`, error);
    }
  }

  /**
   * Repository paths the staged tree changes, after checking each: inside the app
   * directory, not turned into a symlink or submodule, and not reached through a
   * symlink of the base tree. The unified-diff path gets its authoritative check here.
   */
  private async changedEntries(index: SimpleGit, base: string, root: string): Promise<string[]> {
    const raw = await index.raw(['diff-index', '--cached', '-z', '--no-renames', base]);
    const fields = raw.split('\0').filter((f) => f !== '');
    const paths: string[] = [];
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const [, newMode] = fields[i]!.slice(1).split(' ');
      const repoPath = fields[i + 1]!;
      const relative = repoPath.slice(root.length + 1);
      if (!repoPath.startsWith(`${root}/`)) throw refused('unifiedDiff', `${repoPath} is outside the app directory`);
      if (newMode === SYMLINK_MODE || newMode === GITLINK_MODE) throw refused('unifiedDiff', `${relative} would become a symlink or submodule`);
      await this.entryAt(base, repoPath, 'unifiedDiff');
      paths.push(repoPath);
    }
    return paths;
  }

  /** Moves the working tree (non-bare) from `base` to `commit`; false when local edits prevent it. */
  private async syncWorktree(base: string, commit: string): Promise<boolean> {
    if (this.bare) return true;
    try {
      await this.git().raw(['read-tree', '-m', '-u', base, commit]);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * The tree entry at `repoPath` in `commit`, or undefined when absent. Refuses
   * the path when any entry on the way (including the last) is a symlink.
   */
  private async entryAt(commit: string, repoPath: string, field: string): Promise<TreeEntry | undefined> {
    // -t lists every tree on the way; the walk stops where a component is not a tree.
    const walk = parseLsTree(await this.git().raw(['ls-tree', '-t', '-z', '--full-tree', commit, '--', repoPath]));
    const components = repoPath.split('/');
    let found: TreeEntry | undefined;
    for (let depth = 1; depth <= components.length; depth++) {
      const prefix = components.slice(0, depth).join('/');
      const entry = walk.find((e) => e.path === prefix);
      if (!entry) {
        // Not listed: absent, or a non-tree (a symlink or file) the walk could not enter.
        const [blocker] = parseLsTree(await this.git().raw(['ls-tree', '-z', '--full-tree', commit, '--', prefix]));
        if (blocker?.mode === SYMLINK_MODE) throw refused(field, `${prefix} is a symlink; paths through symlinks are refused`);
        return undefined;
      }
      if (entry.mode === SYMLINK_MODE) throw refused(field, `${prefix} is a symlink; paths through symlinks are refused`);
      found = entry;
      if (depth < components.length && entry.type !== 'tree') return undefined;
    }
    return found;
  }

  private git(env: Record<string, string> = {}): SimpleGit {
    return plainGit(this.repository).env(gitEnv(env));
  }
}

function plainGit(dir: string): SimpleGit {
  return simpleGit({ baseDir: dir, maxConcurrentProcesses: 4 }).env(gitEnv());
}

function parseLsTree(raw: string): TreeEntry[] {
  return raw
    .split('\0')
    .filter((line) => line !== '')
    .map((line) => {
      const tab = line.indexOf('\t');
      const [mode = '', type = '', object = ''] = line.slice(0, tab).split(' ');
      return { mode, type, object, path: line.slice(tab + 1) };
    });
}

/** Pre-checks the paths a unified diff names, so `..` and absolute paths get the stable refusal code; returns them normalized. */
function checkDiffPaths(diff: string): string[] {
  if (typeof diff !== 'string' || diff.trim() === '') throw diffInvalid('unifiedDiff', 'unifiedDiff must not be empty');
  const strip = diffHasGitPrefixes(diff);
  let files = 0;
  const paths = new Set<string>();
  for (const line of diff.split('\n')) {
    const match = /^(?:--- |\+\+\+ |rename from |rename to |copy from |copy to )(.*)$/.exec(line);
    if (!match) continue;
    let name = match[1]!.split('\t')[0]!.trim();
    if (name === '/dev/null') continue;
    if (line.startsWith('---') || line.startsWith('+++')) {
      files += 1;
      if (strip) name = name.replace(/^[ab]\//, '');
    }
    paths.add(normalizeAppPath(name, 'unifiedDiff'));
  }
  if (files === 0 && !/^diff --git /m.test(diff)) throw diffInvalid('unifiedDiff', 'unifiedDiff names no file (no ---/+++ headers)');
  return [...paths];
}

function diffHasGitPrefixes(diff: string): boolean {
  const names = [...diff.matchAll(/^(?:---|\+\+\+) (\S+)/gm)].map((m) => m[1]!).filter((n) => n !== '/dev/null');
  return names.length > 0 ? names.every((n) => /^[ab]\//.test(n)) : /^diff --git a\//m.test(diff);
}

function checkIdentity(identity: GitIdentity | undefined, field: string): void {
  const bad = (value: unknown): boolean => typeof value !== 'string' || value.trim() === '' || /[<>\n\r\0]/.test(value);
  if (!identity || bad(identity.name)) throw diffInvalid(`${field}.name`, `${field}.name must be a non-empty name without <, > or newlines`);
  if (bad(identity.email) || !identity.email.includes('@')) throw diffInvalid(`${field}.email`, `${field}.email must be an e-mail address`);
}

function gitMessage(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).trim().split('\n').slice(0, 3).join(' ');
}

function diffInvalid(field: string, message: string, cause?: unknown): UhlpError {
  return new UhlpError('UHLP_DEFINITION_DIFF_INVALID', message, { field }, cause === undefined ? undefined : { cause });
}

function refused(field: string, message: string): UhlpError {
  return new UhlpError('UHLP_DEFINITION_PATH_REFUSED', message, { field });
}

function baseMismatch(expected: string, head: string, cause?: unknown): UhlpError {
  return new UhlpError(
    'UHLP_DEFINITION_BASE_MISMATCH',
    `the diff was made against ${expected.slice(0, 12)}, but HEAD is ${head.slice(0, 12)}; read again and retry`,
    { field: 'expectedBase', expectedBase: expected, head },
    cause === undefined ? undefined : { cause },
  );
}
