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
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { simpleGit, type SimpleGit } from 'simple-git';
import { UhlpError } from '../errors.js';

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

interface TreeEntry {
  mode: string;
  type: string;
  object: string;
  path: string;
}

async function materialize(topLevel: string, prefix: string, commit: string, root: string): Promise<MaterializedRevision> {
  const dir = path.join(root, commit);
  const marker = path.join(dir, '.complete');
  const skipped: string[] = [];
  if (existsSync(marker)) return { commit, dir, skipped };

  const listing = await runGit(topLevel, ['ls-tree', '-r', '-z', '--full-tree', commit, '--', `${prefix}apps`]);
  const entries: TreeEntry[] = [];
  for (const line of listing.toString('utf8').split('\0')) {
    if (!line) continue;
    const tab = line.indexOf('\t');
    const [mode, type, object] = line.slice(0, tab).split(' ') as [string, string, string];
    const filePath = line.slice(tab + 1).slice(prefix.length);
    // Symlinks and submodules could point outside the revision; they are never written.
    if (type !== 'blob' || mode === '120000') skipped.push(filePath);
    else entries.push({ mode, type, object, path: filePath });
  }

  const staging = `${dir}.tmp-${process.pid}-${Date.now()}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  const blobs = await readBlobs(topLevel, entries.map((e) => e.object));
  for (const entry of entries) {
    const target = path.join(staging, entry.path);
    if (!target.startsWith(staging + path.sep)) continue;
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, blobs.get(entry.object)!, { mode: 0o444 });
  }
  await writeFile(path.join(staging, '.complete'), `${commit}\n`);
  try {
    await rename(staging, dir);
  } catch (error) {
    // Another core (or a concurrent load) materialized the same commit first.
    await rm(staging, { recursive: true, force: true });
    if (!existsSync(marker)) throw error;
  }
  return { commit, dir, skipped };
}

/** Reads many blobs with one `git cat-file --batch`. */
function readBlobs(cwd: string, objects: string[]): Promise<Map<string, Buffer>> {
  const unique = [...new Set(objects)];
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['cat-file', '--batch'], { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new UhlpError('UHLP_DEFINITIONS_UNREADABLE', `git cat-file failed: ${stderr.trim()}`));
      const out = Buffer.concat(chunks);
      const blobs = new Map<string, Buffer>();
      let offset = 0;
      for (const object of unique) {
        const newline = out.indexOf(0x0a, offset);
        const header = out.subarray(offset, newline).toString('utf8').split(' ');
        const size = Number(header[2]);
        blobs.set(object, out.subarray(newline + 1, newline + 1 + size));
        offset = newline + 1 + size + 1;
      }
      resolve(blobs);
    });
    child.stdin.end(unique.map((o) => `${o}\n`).join(''));
  });
}

function runGit(cwd: string, args: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve(Buffer.concat(chunks))
        : reject(new UhlpError('UHLP_DEFINITIONS_UNREADABLE', `git ${args[0]} failed: ${stderr.trim()}`)),
    );
  });
}
