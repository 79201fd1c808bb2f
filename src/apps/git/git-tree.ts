/**
 * Reading trees of a Git commit from the object store (never a working tree) and
 * writing them out as immutable revision directories.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { UhlpError } from '../../shared/errors.js';
import { gitEnv } from './git-env.js';

interface TreeEntry {
  mode: string;
  type: string;
  object: string;
  path: string;
}

/**
 * Writes the tree at `<commit>:<sourcePath>` of a repository into `targetDir`,
 * read-only, once. The files are staged beside it and renamed into place, so the
 * directory exists only complete: a second call finds it and does nothing, and a
 * reader never sees half a tree. No marker file is written inside it (an app may
 * hold a file of any name). Symlinks and submodules are never written (they could
 * point outside the revision); they are returned as skipped, relative to `sourcePath`.
 */
export async function materializeTree(options: {
  repoDir: string;
  commit: string;
  sourcePath: string;
  targetDir: string;
}): Promise<{ skipped: string[] }> {
  const { repoDir, commit, targetDir: dir } = options;
  const skipped: string[] = [];
  if (existsSync(dir)) return { skipped };
  const source = options.sourcePath.replace(/\/+$/, '');

  // The source path may come from an AppDefinition: after `--`, and a literal path (gitEnv), never a pathspec.
  const listing = await runGit(repoDir, ['ls-tree', '-r', '-z', '--full-tree', '--end-of-options', commit, '--', source]);
  const entries: TreeEntry[] = [];
  for (const line of listing.toString('utf8').split('\0')) {
    if (!line) continue;
    const tab = line.indexOf('\t');
    const [mode, type, object] = line.slice(0, tab).split(' ') as [string, string, string];
    const filePath = line.slice(tab + 1).slice(source.length + 1);
    if (type !== 'blob' || mode === '120000') skipped.push(filePath);
    else entries.push({ mode, type, object, path: filePath });
  }

  const staging = `${dir}.tmp-${process.pid}-${Date.now()}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  const blobs = await readBlobs(repoDir, entries.map((e) => e.object));
  for (const entry of entries) {
    const target = path.join(staging, entry.path);
    if (!target.startsWith(staging + path.sep)) continue;
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, blobs.get(entry.object)!, { mode: 0o444 });
  }
  try {
    await rename(staging, dir);
  } catch (error) {
    // Another core (or a concurrent load) materialized the same revision first.
    await rm(staging, { recursive: true, force: true });
    if (!existsSync(dir)) throw error;
  }
  return { skipped };
}

/** The names of the subdirectories of `<commit>:<treePath>` (one level, sorted as Git sorts them). */
export async function listTreeDirectories(repoDir: string, commit: string, treePath: string): Promise<string[]> {
  const tree = treePath.replace(/\/+$/, '');
  const listing = await runGit(repoDir, ['ls-tree', '-z', '--full-tree', commit, '--', `${tree}/`]);
  const names: string[] = [];
  for (const line of listing.toString('utf8').split('\0')) {
    if (!line) continue;
    const tab = line.indexOf('\t');
    const type = line.slice(0, tab).split(' ')[1];
    if (type === 'tree') names.push(line.slice(tab + 1).slice(tree.length + 1));
  }
  return names;
}

/** Reads many blobs with one `git cat-file --batch`. */
function readBlobs(cwd: string, objects: string[]): Promise<Map<string, Buffer>> {
  const unique = [...new Set(objects)];
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['cat-file', '--batch'], { cwd, env: gitEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
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

export interface RunGitOptions {
  /** The environment. @defaultValue gitEnv(): no GIT_* variables of the process, literal pathspecs, no prompts */
  env?: Record<string, string>;
  /** Kill git after this long (the failure says so). @defaultValue no limit */
  timeoutMs?: number;
}

/**
 * Runs git with arguments that are never parsed by a shell. Callers put values
 * that come from apps or clients after `--end-of-options` or `--`.
 */
export function runGit(cwd: string, args: string[], options: RunGitOptions = {}): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, {
      cwd,
      env: options.env ?? gitEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs, killSignal: 'SIGKILL' as const } : {}),
    });
    const chunks: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) return resolve(Buffer.concat(chunks));
      const command = args.find((arg) => !arg.startsWith('-') && !arg.includes('=')) ?? 'command';
      const why = signal === 'SIGKILL' && options.timeoutMs !== undefined ? `did not finish within ${options.timeoutMs} ms` : `failed: ${stderr.trim()}`;
      reject(new UhlpError('UHLP_DEFINITIONS_UNREADABLE', `git ${command} ${why}`));
    });
  });
}
