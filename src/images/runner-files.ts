/**
 * The runners a pool can run (`runner: jit | llm | csjs | python`), and the files each needs,
 * whatever it runs in: for a Node runner the compiled modules its entry imports, the packages
 * they name (and their dependencies), and a package.json that makes dist/ an
 * ES module tree; for the python runner its directory (dist/runners/python: its .py
 * files and the contract's schema, scripts/copy-python-runner.mjs) plus the sandboxes' seccomp
 * program, which it loads on itself in a pod or container (`--seccomp-self`). A runner's image copies them to /app; the process sandbox
 * stages them in a directory of their own and mounts that, so a runner never
 * sees the rest of the installation, nor the other runner's code.
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { seccompFilter } from '../sandbox/seccomp-filter.js';
import { UhlpError } from '../shared/errors.js';
import { importClosure } from './import-closure.js';

/** This package's root: it holds dist/ (after `npm run build`) and node_modules/. */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** A pool's `runner`. */
export type RunnerKind = 'jit' | 'llm' | 'csjs' | 'python' | 'mcp';

export interface RunnerProgramInfo {
  /** The program's name: its image repository is `uhlp/<name>`. */
  readonly name: 'jit-runner' | 'llm-orchestrator' | 'csjs-runner' | 'python-runner' | 'mcp-host';
  /** The compiled entry, relative to the package root and to the runner's directory. */
  readonly entry: string;
  /**
   * It reads app files from a mounted revisions directory (`--definitions`);
   * the llm-orchestrator reads them through MCP and gets no such mount.
   */
  readonly readsDefinitions: boolean;
  /**
   * It loads a native addon (the csjs runner: isolated-vm), so Node's
   * permission model runs it with `--allow-addons`. No runner that imports
   * app scripts has this: a script could write an addon of its own to its
   * tmp directory and load it. @defaultValue false
   */
  readonly loadsAddons?: boolean;
  /**
   * What runs the entry: Node, or CPython for the python runner (its sandboxes
   * carry the machine's python3 and its standard library instead of Node, and no
   * Node permission model: see process-sandbox.ts). @defaultValue node
   */
  readonly language?: 'node' | 'python';
}

export const RUNNER_PROGRAMS: Readonly<Record<RunnerKind, RunnerProgramInfo>> = {
  jit: { name: 'jit-runner', entry: 'dist/runners/jit/main.js', readsDefinitions: true },
  llm: { name: 'llm-orchestrator', entry: 'dist/runners/llm-orchestrator/main.js', readsDefinitions: false },
  csjs: { name: 'csjs-runner', entry: 'dist/runners/csjs/main.js', readsDefinitions: false, loadsAddons: true },
  python: { name: 'python-runner', entry: 'dist/runners/python/main.py', readsDefinitions: true, language: 'python' },
  // Reads the app's revisions for servers that are scripts of the app.
  mcp: { name: 'mcp-host', entry: 'dist/runners/mcp-host/main.js', readsDefinitions: true },
};

/**
 * The python runner's copy of the sandboxes' seccomp program (seccompFilter() for
 * this machine's architecture, the image's), in its directory: a pod's runtime
 * does not load the policy, so the runner loads it on itself (seccomp_self.py).
 */
export const PYTHON_SECCOMP_FILE = 'seccomp-filter.bpf';

export const RUNNER_KINDS: readonly RunnerKind[] = ['jit', 'llm', 'csjs', 'python', 'mcp'];

/** Whether the runner is CPython's (else Node's). */
export function isPythonRunner(runner: RunnerKind): boolean {
  return RUNNER_PROGRAMS[runner].language === 'python';
}

/**
 * Packages of which a runner needs only some files at run time: isolated-vm's
 * addon (the published build for this platform, or one compiled at install) and
 * the few lines that load it (with node-gyp-build, its one dependency); its
 * sources, vendored V8 headers and other platforms' builds have no place in a
 * sandbox.
 */
const RUNTIME_FILES: Readonly<Record<string, RegExp>> = {
  'isolated-vm': new RegExp(
    `^(package\\.json|isolated-vm\\.js|LICENSE|build/Release/isolated_vm\\.node|prebuilds/${process.platform}-${process.arch}/isolated-vm\\.abi\\d+\\.glibc\\.node)$`,
  ),
};
/** Build output the runner does not load: source maps and type declarations (and bytecode a Python left behind). */
const SKIPPED_FILE = /(\.map|\.d\.[cm]?ts|\.tsbuildinfo)$|__pycache__/;

export interface RunnerFile {
  /** Path in the runner's directory, with `/` separators. */
  readonly name: string;
  readonly content: Buffer;
}

/** Every file of the runner's directory, sorted by name. */
export async function runnerAppFiles(runner: RunnerKind, root: string = PACKAGE_ROOT): Promise<RunnerFile[]> {
  const program = RUNNER_PROGRAMS[runner];
  // The python runner imports nothing of dist/ but its own directory, and no package.
  if (isPythonRunner(runner)) {
    const files = [...(await collectFiles(root, path.posix.dirname(program.entry))), { name: PYTHON_SECCOMP_FILE, content: seccompFilter() }];
    return files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }
  // dist/ is ESM; without "type": "module" next to it Node would read it as CommonJS.
  const files: RunnerFile[] = [{ name: 'package.json', content: Buffer.from(`{"name":"uhlp-${program.name}","private":true,"type":"module"}\n`) }];
  const closure = await importClosure(root, program.entry).catch((error: NodeJS.ErrnoException) => {
    throw new UhlpError(
      'UHLP_IMAGE_BUILD_FAILED',
      error.code === 'ENOENT' ? `${error.path ?? program.entry} is missing; run \`npm run build\` (and npm ci) first` : error.message,
      { root },
    );
  });
  for (const file of closure.files) files.push(...(await collectFiles(root, file)));
  for (const dir of await packageDirs(root, closure.packages)) {
    const only = RUNTIME_FILES[dir.slice('node_modules/'.length)];
    const found = await collectFiles(root, dir);
    files.push(...(only === undefined ? found : found.filter((file) => only.test(file.name.slice(dir.length + 1)))));
  }
  return files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Files under `root/relative` (a file or a directory). */
async function collectFiles(root: string, relative: string): Promise<RunnerFile[]> {
  const absolute = path.join(root, relative);
  const info = await stat(absolute).catch(() => undefined);
  if (!info) {
    throw new UhlpError('UHLP_IMAGE_BUILD_FAILED', `${absolute} is missing; run \`npm run build\` (and npm ci) first`, { path: absolute });
  }
  const names = info.isDirectory()
    ? (await readdir(absolute, { recursive: true })).map((name) => path.join(relative, name))
    : [relative];
  const files: RunnerFile[] = [];
  for (const name of names) {
    if (SKIPPED_FILE.test(name)) continue;
    const file = path.join(root, name);
    const fileInfo = await stat(file);
    if (!fileInfo.isFile()) continue;
    files.push({ name: name.split(path.sep).join('/'), content: await readFile(file) });
  }
  return files;
}

/** node_modules directories of `packages` and everything they depend on, relative to root. */
async function packageDirs(root: string, packages: readonly string[]): Promise<string[]> {
  const found = new Set<string>();
  const queue = [...packages];
  while (queue.length > 0) {
    const name = queue.shift()!;
    const dir = path.join('node_modules', name);
    if (found.has(dir)) continue;
    found.add(dir);
    const manifest = await readFile(path.join(root, dir, 'package.json'), 'utf8').catch(() => {
      throw new UhlpError('UHLP_IMAGE_BUILD_FAILED', `package ${name} is not installed under ${root}; run npm ci`, { package: name });
    });
    queue.push(...Object.keys((JSON.parse(manifest) as { dependencies?: Record<string, string> }).dependencies ?? {}));
  }
  return [...found].sort();
}
