/**
 * The definitions directory as a Git repository. Apps are read from commits, never
 * from the working tree: a revision is materialized once into an immutable
 * directory `<revisionsRoot>/<commit>/apps/...` that runners import scripts from,
 * so every request runs against exactly one committed revision.
 *
 * The directory may be a whole repository or a subdirectory of one (then the apps
 * live under that prefix). A plain directory is `git init`ed and its content
 * committed, so a first `uhlp dev` on a fresh folder just works.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { simpleGit, type SimpleGit } from 'simple-git';
import { UhlpError } from '../errors.js';
import { materializeTree } from './git-tree.js';

export interface DefinitionsRepo {
  /** The directory the user named. */
  readonly dir: string;
  /** Repository top level. */
  readonly topLevel: string;
  /** Path of `dir` inside the repository, `''` or ending with `/`. */
  readonly prefix: string;
  head(): Promise<string>;
  /** Writes the revision's `apps/` tree under `<root>/<commit>/` once; returns that directory. */
  materialize(commit: string, root: string): Promise<MaterializedRevision>;
}

export interface MaterializedRevision {
  readonly commit: string;
  readonly dir: string;
  /** Tree entries that were not written because they are symlinks or submodules. */
  readonly skipped: readonly string[];
}

const COMMITTER = ['-c', 'user.name=uhlp', '-c', 'user.email=uhlp@localhost'];

export async function openDefinitionsRepo(dir: string): Promise<DefinitionsRepo> {
  const absolute = path.resolve(dir);
  let info;
  try {
    info = await stat(absolute);
  } catch {
    throw new UhlpError('UHLP_DEFINITIONS_UNREADABLE', `definitions directory ${absolute} does not exist`);
  }
  if (!info.isDirectory()) throw new UhlpError('UHLP_DEFINITIONS_UNREADABLE', `${absolute} is not a directory`);

  const git = simpleGit({ baseDir: absolute });
  const inside = await git.checkIsRepo().catch(() => false);
  if (!inside) await initAndCommit(git);

  const topLevel = (await git.revparse(['--show-toplevel'])).trim();
  const prefix = (await git.revparse(['--show-prefix'])).trim();
  const repo: DefinitionsRepo = {
    dir: absolute,
    topLevel,
    prefix,
    async head() {
      try {
        return (await git.revparse(['--verify', 'HEAD^{commit}'])).trim();
      } catch {
        throw new UhlpError('UHLP_DEFINITIONS_UNREADABLE', `the repository at ${topLevel} has no commit yet: commit the definitions first`);
      }
    },
    materialize: (commit, root) => materialize(topLevel, prefix, commit, root),
  };
  await repo.head();
  return repo;
}

async function initAndCommit(git: SimpleGit): Promise<void> {
  await git.init();
  await git.raw(['add', '--all']);
  await git.raw([...COMMITTER, 'commit', '--allow-empty', '--quiet', '-m', 'Initial definitions']);
}

async function materialize(topLevel: string, prefix: string, commit: string, root: string): Promise<MaterializedRevision> {
  const dir = path.join(root, commit);
  const { skipped } = await materializeTree({ repoDir: topLevel, commit, sourcePath: `${prefix}apps`, targetDir: dir, targetPath: 'apps' });
  return { commit, dir, skipped };
}
