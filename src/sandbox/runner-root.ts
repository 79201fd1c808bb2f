/**
 * A runner's files staged once in a directory of their own
 * (`<dir>/<runner name>-<hash>/`), read-only, for process sandboxes to mount or
 * read: the same files the runner's image carries, and nothing else of the
 * installation (not its source, not the data directory, not the other runner).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PACKAGE_ROOT, RUNNER_PROGRAMS, runnerAppFiles, type RunnerKind } from '../images/runner-files.js';

export interface StagedRunner {
  /** The runner's directory. */
  readonly dir: string;
  /** Its entry module, inside `dir`. */
  readonly entry: string;
}

/** Writes the files of `runner` under `parent` unless the same files are already there. */
export async function stageRunnerRoot(parent: string, runner: RunnerKind, packageRoot: string = PACKAGE_ROOT): Promise<StagedRunner> {
  const program = RUNNER_PROGRAMS[runner];
  const files = await runnerAppFiles(runner, packageRoot);
  const hash = createHash('sha256');
  for (const file of files) hash.update(`${file.name}\0${createHash('sha256').update(file.content).digest('hex')}\n`);
  const dir = path.join(parent, `${program.name}-${hash.digest('hex').slice(0, 16)}`);
  const staged = { dir, entry: path.join(dir, program.entry) };
  if (existsSync(dir)) return staged;

  const staging = `${dir}.tmp-${process.pid}-${Date.now()}`;
  await rm(staging, { recursive: true, force: true });
  for (const file of files) {
    const target = path.join(staging, file.name);
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, file.content, { mode: 0o444 });
  }
  await chmod(staging, 0o755);
  try {
    await rename(staging, dir);
  } catch (error) {
    // Another core staged the same files first.
    await rm(staging, { recursive: true, force: true });
    if (!existsSync(dir)) throw error;
  }
  return staged;
}
