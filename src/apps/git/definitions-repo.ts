/**
 * The definitions directory as a Git repository. Apps are read from commits, never
 * from the working tree: each app of a commit is materialized once into an
 * immutable directory `<revisionsRoot>/<appId>/<commit>/` (revision-paths.ts) that
 * runners import scripts from, so every request runs against exactly one
 * committed revision, and a sandbox mounts its own app's revisions only.
 *
 * The directory may be a whole repository or a subdirectory of one (then the apps
 * live under that prefix). A plain directory that holds `apps/` is `git init`ed
 * and its content committed, so a first `uhlp dev` on a fresh folder just works
 * (the repository says so: `initialized`); one without `apps/` is refused, so
 * that a mistyped path never turns some other directory into a repository.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { simpleGit, type SimpleGit } from 'simple-git';
import { UhlpError } from '../../shared/errors.js';
import { APP_ID_PATTERN } from '../definition-paths.js';
import { listTreeDirectories, materializeTree } from './git-tree.js';
import { appRevisionDir } from '../revision-paths.js';

export interface DefinitionsRepo {
  /** The directory the user named. */
  readonly dir: string;
  /** Repository top level. */
  readonly topLevel: string;
  /** Path of `dir` inside the repository, `''` or ending with `/`. */
  readonly prefix: string;
  head(): Promise<string>;
  /** Writes each app directory of the commit to `<root>/<appId>/<commit>/` once. */
  materialize(commit: string, root: string): Promise<MaterializedRevision>;
  /** True when the directory was a plain one, made a repository and committed by this open. */
  readonly initialized: boolean;
}

export interface MaterializedApp {
  /** The directory's name under apps/: the appId it must declare. */
  readonly name: string;
  /** The app directory at this commit. */
  readonly dir: string;
}

export interface MaterializedRevision {
  readonly commit: string;
  readonly apps: readonly MaterializedApp[];
  /** Directories under apps/ that cannot be an app id, so were not written (`apps/<name>`). */
  readonly badNames: readonly string[];
  /** Tree entries that were not written because they are symlinks or submodules (`apps/<name>/<path>`). */
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
  if (!inside) {
    const apps = await stat(path.join(absolute, 'apps')).catch(() => undefined);
    if (apps === undefined || !apps.isDirectory()) {
      throw new UhlpError(
        'UHLP_DEFINITIONS_UNREADABLE',
        `${absolute} is not a definitions directory: it holds no apps/ directory and is not in a Git repository. ` +
          'An app is apps/<appId>/app.yaml with its files beside it (docs/apps.md); create one there, or name the directory that holds apps/',
        { dir: absolute },
      );
    }
    await initAndCommit(git);
  }

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
    initialized: !inside,
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
  const apps: MaterializedApp[] = [];
  const badNames: string[] = [];
  const skipped: string[] = [];
  for (const name of await listTreeDirectories(topLevel, commit, `${prefix}apps`)) {
    // The name becomes a path on this host: only what an app id may be.
    if (!APP_ID_PATTERN.test(name)) {
      badNames.push(`apps/${name}`);
      continue;
    }
    const dir = appRevisionDir(root, name, commit);
    const written = await materializeTree({ repoDir: topLevel, commit, sourcePath: `${prefix}apps/${name}`, targetDir: dir });
    skipped.push(...written.skipped.map((file) => `apps/${name}/${file}`));
    apps.push({ name, dir });
  }
  return { commit, apps, badNames, skipped };
}
