/**
 * What a python sandbox needs of this machine's CPython (Debian's `python3`, at
 * /usr/bin/python3, never a Python of a version manager): the interpreter, its
 * standard library, and exactly the shared libraries the interpreter and the
 * library's compiled modules link, found with ldd. The process sandbox mounts
 * them read-only; the python image (build-images.ts) copies them into a
 * `FROM scratch` image, as node-runtime.ts does for Node.
 *
 * Every path keeps the place it has on this machine but the interpreter's own,
 * which is IMAGE_PYTHON_PATH: CPython finds its library from its prefix (the
 * directory above its binary, else the one it was built with), so both find
 * /usr/lib/python3.X.
 */
import { execFile } from 'node:child_process';
import { readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { UhlpError } from '../shared/errors.js';
import { parseLdd, type RuntimeFile } from './node-runtime.js';

const run = promisify(execFile);

/** The Python of Debian's `python3` package. */
export const DEFAULT_PYTHON_PATH = '/usr/bin/python3';
/** Where the interpreter lives inside every python sandbox. */
export const IMAGE_PYTHON_PATH = '/usr/bin/python3';
/**
 * How every python runner is started: no bytecode written (-B, on top of
 * PYTHONDONTWRITEBYTECODE=1), no PYTHON* variable read (-E), no site packages
 * (-S: the standard library only), UTF-8 whatever the locale.
 */
export const PYTHON_FLAGS: readonly string[] = ['-B', '-E', '-S', '-X', 'utf8'];

export interface PythonRuntime {
  /** `3.11.2`. */
  readonly version: string;
  readonly binary: RuntimeFile;
  /** The standard library's directory (`/usr/lib/python3.11`), at the same path inside. */
  readonly stdlib: string;
  /** Libraries and the dynamic loader, at the paths ldd names, for the binary and every compiled module kept. */
  readonly libraries: readonly RuntimeFile[];
  /** Compiled modules of lib-dynload left out: what they link is not installed here. */
  readonly skippedModules: readonly string[];
}

/**
 * Parts of the standard library no sandbox runs: the static library and build
 * files, the test suites, the GUI and IDE, installers and the 2to3 converter.
 * Left out of the image; the process sandbox mounts the directory whole (read-only).
 */
const LEFT_OUT = /^(config-[^/]+|test|idlelib|tkinter|turtledemo|ensurepip|lib2to3|pydoc_data|site-packages|dist-packages)(\/|$)|^lib-dynload\/(_test|_xx|xx|_ctypes_test)|(^|\/)__pycache__\/[^/]+\.opt-[12]\.pyc$|(^|\/)turtle\.py$/;

/** Whether `relative` (to the standard library's directory) is left out of the image. */
export function leftOutOfImage(relative: string): boolean {
  return LEFT_OUT.test(relative);
}

/** The interpreter at `pythonPath` (a symlink is followed), its library and the libraries they link on this host. */
export async function findPythonRuntime(pythonPath: string = DEFAULT_PYTHON_PATH): Promise<PythonRuntime> {
  let binary: string;
  let facts: { version: string; stdlib: string };
  try {
    binary = await realpath(pythonPath);
    const { stdout } = await run(binary, ['-E', '-S', '-c', 'import json, platform, sysconfig; print(json.dumps({"version": platform.python_version(), "stdlib": sysconfig.get_path("stdlib")}))']);
    facts = JSON.parse(stdout) as { version: string; stdlib: string };
  } catch (error) {
    throw new UhlpError(
      'UHLP_SANDBOX_UNAVAILABLE',
      `no Python at ${pythonPath} (${(error as Error).message.split('\n')[0]}); runner: python pools need Debian's python3 (apt-get install python3)`,
      { pythonPath },
    );
  }
  const dynload = path.join(facts.stdlib, 'lib-dynload');
  const modules = (await readdir(dynload).catch(() => [] as string[]))
    .filter((name) => name.endsWith('.so') && !leftOutOfImage(`lib-dynload/${name}`))
    .map((name) => path.join(dynload, name));
  const linked = await lddEach([binary, ...modules]);
  const libraries = new Map<string, RuntimeFile>();
  const skippedModules: string[] = [];
  for (const [file, found] of linked) {
    if (found === undefined) {
      if (file === binary) throw new UhlpError('UHLP_SANDBOX_UNAVAILABLE', `${binary} links a library that is not installed`, { pythonPath });
      skippedModules.push(path.basename(file));
      continue;
    }
    for (const library of found) libraries.set(library.imagePath, library);
  }
  return {
    version: facts.version,
    binary: { hostPath: binary, imagePath: IMAGE_PYTHON_PATH },
    stdlib: facts.stdlib,
    libraries: [...libraries.values()].sort((a, b) => (a.imagePath < b.imagePath ? -1 : 1)),
    skippedModules,
  };
}

/**
 * The files of the standard library the image carries, relative to its
 * directory, sorted; compiled modules whose libraries are missing are left out
 * with the rest of LEFT_OUT.
 */
export async function stdlibImageFiles(runtime: PythonRuntime): Promise<string[]> {
  const skipped = new Set(runtime.skippedModules.map((name) => `lib-dynload/${name}`));
  const names = (await readdir(runtime.stdlib, { recursive: true })).map(String);
  const files: string[] = [];
  for (const name of names.sort()) {
    const relative = name.split(path.sep).join('/');
    if (leftOutOfImage(relative) || skipped.has(relative)) continue;
    if ((await stat(path.join(runtime.stdlib, name))).isFile()) files.push(relative);
  }
  return files;
}

/**
 * ldd of every file in one run (`ldd a b` prints `a:` then its libraries, and so
 * on); a file that links a library ldd cannot find maps to undefined.
 */
async function lddEach(files: readonly string[]): Promise<Map<string, RuntimeFile[] | undefined>> {
  // ldd exits 1 when one of the files is no dynamic object: its output still names the rest.
  const output = await run('ldd', [...files], { maxBuffer: 16 * 1024 * 1024 }).then(
    (result) => result.stdout,
    (error: { stdout?: string }) => error.stdout ?? '',
  );
  const sections = new Map<string, string[]>();
  if (files.length === 1) sections.set(files[0]!, output.split('\n'));
  else {
    let current: string[] | undefined;
    for (const line of output.split('\n')) {
      const header = /^(\/\S+):$/.exec(line);
      if (header) sections.set(header[1]!, (current = []));
      else current?.push(line);
    }
  }
  const found = new Map<string, RuntimeFile[] | undefined>();
  for (const file of files) {
    const lines = sections.get(file);
    if (lines === undefined) {
      found.set(file, undefined);
      continue;
    }
    try {
      found.set(file, parseLdd(lines.filter((line) => !/not a dynamic executable/.test(line)).join('\n')));
    } catch {
      found.set(file, undefined);
    }
  }
  return found;
}
