/**
 * `uhlp images build`: the sandbox images, built locally with no registry.
 *
 *   uhlp/node-base:<hash>         FROM scratch: the host's Node (stripped), exactly the
 *                                 libraries it links, /etc/passwd with a non-root user.
 *   uhlp/jit-runner:<hash>        the base plus the compiled files the jit-runner
 *                                 imports and the packages they name (@sinclair/typebox).
 *   uhlp/llm-orchestrator:<hash>  the base plus the files the llm-orchestrator imports
 *                                 and their packages (nunjucks, ajv, @sinclair/typebox).
 *   uhlp/csjs-runner:<hash>       the base plus the csjs runner and isolated-vm's addon.
 *   uhlp/python-base:<hash>       FROM scratch: the host's CPython (Debian's python3), its
 *                                 standard library (no tests, GUI or build files) and exactly
 *                                 the libraries they link; no /etc/passwd (the user is numeric).
 *   uhlp/python-runner:<hash>     the python base plus the python runner's files.
 *
 * Each tag is a hash of the image's inputs, so a build only happens when an input
 * changed; `:latest` and `:<package version>` follow the newest build (the Helm chart
 * names the version, its appVersion, when given no tag). No image has a shell.
 */
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { UhlpError } from '../shared/errors.js';
import { contextStream, packContext, type ContextEntry } from './build-context.js';
import { pinnedNodeBinary } from './pinned-node.js';
import { isPythonRunner, PACKAGE_ROOT, PYTHON_SECCOMP_FILE, RUNNER_PROGRAMS, runnerAppFiles, type RunnerKind } from './runner-files.js';
import { IMAGE_NODE_PATH, findNodeRuntime } from './node-runtime.js';
import { findPythonRuntime, IMAGE_PYTHON_PATH, PYTHON_FLAGS, stdlibImageFiles, type PythonRuntime } from './python-runtime.js';

const run = promisify(execFile);

export const NODE_BASE_REPOSITORY = 'uhlp/node-base';
export const JIT_RUNNER_REPOSITORY = 'uhlp/jit-runner';
export const LLM_ORCHESTRATOR_REPOSITORY = 'uhlp/llm-orchestrator';
export const CSJS_RUNNER_REPOSITORY = 'uhlp/csjs-runner';
export const PYTHON_BASE_REPOSITORY = 'uhlp/python-base';
export const PYTHON_RUNNER_REPOSITORY = 'uhlp/python-runner';
export const MCP_HOST_REPOSITORY = 'uhlp/mcp-host';
/** The repository of each runner's image. */
export const RUNNER_REPOSITORIES: Readonly<Record<RunnerKind, string>> = {
  jit: JIT_RUNNER_REPOSITORY,
  llm: LLM_ORCHESTRATOR_REPOSITORY,
  csjs: CSJS_RUNNER_REPOSITORY,
  python: PYTHON_RUNNER_REPOSITORY,
  mcp: MCP_HOST_REPOSITORY,
};
/** The image the Docker driver runs for a pool of `runner` that names none. */
export const RUNNER_IMAGES: Readonly<Record<RunnerKind, string>> = {
  jit: `${JIT_RUNNER_REPOSITORY}:latest`,
  llm: `${LLM_ORCHESTRATOR_REPOSITORY}:latest`,
  csjs: `${CSJS_RUNNER_REPOSITORY}:latest`,
  python: `${PYTHON_RUNNER_REPOSITORY}:latest`,
  mcp: `${MCP_HOST_REPOSITORY}:latest`,
};
/** The image the Docker driver runs when a jit pool names none. */
export const JIT_RUNNER_IMAGE = RUNNER_IMAGES.jit;
/** This package's version: every build is tagged with it too, and the Helm chart's appVersion is it. */
export const PACKAGE_VERSION: string = (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
/** The tags that follow the newest build of a repository, beside its hashed tags. */
const MOVING_TAGS = ['latest', PACKAGE_VERSION];
/** The non-root user every sandbox runs as, unless the driver picks the core's own uid. */
export const SANDBOX_UID = 10001;
/** Where the runner files sit inside a runner image. */
export const IMAGE_APP_DIR = '/app';

/** The python runner's command line inside its image: the image's ENTRYPOINT, which the drivers give again (as they do Node's). */
export function pythonImageCommand(): string[] {
  return [IMAGE_PYTHON_PATH, ...PYTHON_FLAGS, `${IMAGE_APP_DIR}/${RUNNER_PROGRAMS.python.entry}`];
}
/**
 * The arguments that make the python runner load the sandboxes' seccomp policy on
 * itself, from its image's copy: in a pod, whose runtime loads only its default
 * profile (a container gets the policy from Docker, as a profile).
 */
export function pythonSeccompArgs(): string[] {
  return ['--seccomp-self', `${IMAGE_APP_DIR}/${PYTHON_SECCOMP_FILE}`];
}
/** Label carrying the full input hash (tags carry a prefix of it). */
export const IMAGE_INPUTS_LABEL = 'dev.uhlp.image-inputs';

/** Bumped whenever the layout below changes, so old tags stop matching. */
const LAYOUT_VERSION = '1';

export interface BuildImagesOptions {
  /** Engine to build with. @defaultValue `new Docker()` (DOCKER_HOST or /var/run/docker.sock) */
  readonly docker?: Docker;
  /** Node binary copied into the base image. @defaultValue the pinned Node (scripts/node-pin.json) */
  readonly nodePath?: string;
  /** CPython copied into the python base image, with its standard library. @defaultValue /usr/bin/python3 (Debian's python3) */
  readonly pythonPath?: string;
  /** Package root holding dist/ (after `npm run build`) and node_modules/. @defaultValue this package's root */
  readonly packageRoot?: string;
  /** Build even when the input-hash tag exists. @defaultValue false */
  readonly force?: boolean;
  /**
   * Remove older hashed tags of the repositories after a build. An image a
   * container still uses is kept (the engine refuses to remove it).
   * @defaultValue false
   */
  readonly prune?: boolean;
  /** Receives the engine's build output, line by line. @defaultValue discarded */
  readonly onProgress?: (line: string) => void;
}

export interface BuiltImage {
  /** `repository:hash`, the reference drivers should run. */
  readonly reference: string;
  /** Engine image id (sha256:...). */
  readonly id: string;
  readonly sizeBytes: number;
  /** False when the tag existed and nothing was built. */
  readonly built: boolean;
}

export interface BuildImagesResult {
  readonly nodeBase: BuiltImage;
  readonly jitRunner: BuiltImage;
  readonly llmOrchestrator: BuiltImage;
  /** The csjs runner: the base plus its files and isolated-vm's compiled addon. */
  readonly csjsRunner: BuiltImage;
  /** The mcp-host of runner: mcp pools: the base plus its files (servers' packages are mounted). */
  readonly mcpHost: BuiltImage;
  /** CPython and its standard library, FROM scratch; none on a machine without python3 (`pythonSkipped` says why). */
  readonly pythonBase?: BuiltImage;
  /** The python runner: the python base plus its files; none with no python base. */
  readonly pythonRunner?: BuiltImage;
  /**
   * Why the python images were not built: this machine has no python3 at the default
   * path (a `pythonPath` that was asked for and is missing fails the build instead),
   * so that a machine that runs no python pool builds the Node images all the same.
   */
  readonly pythonSkipped?: string;
}

export async function buildImages(options: BuildImagesOptions = {}): Promise<BuildImagesResult> {
  const docker = options.docker ?? new Docker();
  const nodeBase = await buildNodeBase(docker, options);
  const jitRunner = await buildRunnerImage(docker, nodeBase.reference, 'jit', options);
  const llmOrchestrator = await buildRunnerImage(docker, nodeBase.reference, 'llm', options);
  const csjsRunner = await buildRunnerImage(docker, nodeBase.reference, 'csjs', options);
  const mcpHost = await buildRunnerImage(docker, nodeBase.reference, 'mcp', options);
  const python = await findPythonRuntime(options.pythonPath).catch((error: Error) => {
    if (options.pythonPath !== undefined) throw new UhlpError('UHLP_IMAGE_BUILD_FAILED', `the python image needs a CPython: ${error.message}`, { pythonPath: options.pythonPath });
    return error.message;
  });
  const pythonBase = typeof python === 'string' ? undefined : await buildPythonBase(docker, python, options);
  const pythonRunner = pythonBase === undefined ? undefined : await buildRunnerImage(docker, pythonBase.reference, 'python', options);
  if (options.prune) {
    await pruneOlder(docker, MCP_HOST_REPOSITORY, mcpHost.reference);
    // The runners first: older runner images are what keep older bases in use.
    await pruneOlder(docker, JIT_RUNNER_REPOSITORY, jitRunner.reference);
    await pruneOlder(docker, LLM_ORCHESTRATOR_REPOSITORY, llmOrchestrator.reference);
    await pruneOlder(docker, CSJS_RUNNER_REPOSITORY, csjsRunner.reference);
    if (pythonRunner) await pruneOlder(docker, PYTHON_RUNNER_REPOSITORY, pythonRunner.reference);
    await pruneOlder(docker, NODE_BASE_REPOSITORY, nodeBase.reference);
    if (pythonBase) await pruneOlder(docker, PYTHON_BASE_REPOSITORY, pythonBase.reference);
  }
  return { nodeBase, jitRunner, llmOrchestrator, csjsRunner, mcpHost, ...(pythonBase && pythonRunner ? { pythonBase, pythonRunner } : { pythonSkipped: python as string }) };
}

/**
 * Removes the tags of `repository` other than `keep` and the moving tags; an image goes
 * with its last tag. The engine refuses images a container uses: those stay.
 */
async function pruneOlder(docker: Docker, repository: string, keep: string): Promise<void> {
  const images = await docker.listImages({ filters: JSON.stringify({ reference: [repository] }) });
  const moving = new Set(MOVING_TAGS.map((tag) => `${repository}:${tag}`));
  const stale = images
    .flatMap((image) => image.RepoTags ?? [])
    .filter((tag) => tag.startsWith(`${repository}:`) && tag !== keep && !moving.has(tag));
  for (const tag of stale) await docker.getImage(tag).remove().catch(() => undefined);
}

export async function buildNodeBase(docker: Docker, options: BuildImagesOptions): Promise<BuiltImage> {
  const nodePath = options.nodePath ?? (await pinnedNodeBinary());
  const runtime = await findNodeRuntime(nodePath).catch((error: Error) => {
    throw new UhlpError('UHLP_IMAGE_BUILD_FAILED', `cannot list the libraries of ${nodePath}: ${error.message}`, { nodePath });
  });
  const dockerfile = [
    'FROM scratch',
    'COPY rootfs/ /',
    `USER ${SANDBOX_UID}:${SANDBOX_UID}`,
    'ENV PATH=/usr/local/bin',
    `ENTRYPOINT ["${IMAGE_NODE_PATH}"]`,
    '',
  ].join('\n');
  const etc: ContextEntry[] = [
    { name: 'rootfs/etc/passwd', content: Buffer.from(`root:x:0:0:root:/:/nonexistent\nsandbox:x:${SANDBOX_UID}:${SANDBOX_UID}:sandbox:/tmp:/nonexistent\n`) },
    { name: 'rootfs/etc/group', content: Buffer.from(`root:x:0:\nsandbox:x:${SANDBOX_UID}:\n`) },
    { name: 'rootfs/tmp', mode: 0o1777 },
  ];

  // The tag hashes the host files as they are (before stripping), so deciding
  // whether to build costs a read, not a strip.
  const hash = createHash('sha256').update(`node-base/${LAYOUT_VERSION}\n${dockerfile}`);
  for (const entry of etc) hash.update(`${entry.name}\n${entry.mode ?? ''}\n${entry.content?.toString() ?? ''}\n`);
  for (const file of [runtime.binary, ...runtime.libraries]) {
    hash.update(`${file.imagePath}\n${sha256(await readHostFile(file.hostPath))}\n`);
  }
  const digest = hash.digest('hex');
  const reference = `${NODE_BASE_REPOSITORY}:${digest.slice(0, 16)}`;

  return ensureImage(docker, reference, digest, options, async () => {
    const entries: ContextEntry[] = [{ name: 'Dockerfile', content: Buffer.from(dockerfile) }, ...etc];
    entries.push({ name: `rootfs${IMAGE_NODE_PATH}`, content: await strippedCopy(nodePath), mode: 0o755 });
    for (const library of runtime.libraries) {
      entries.push({ name: `rootfs${library.imagePath}`, content: await readHostFile(library.hostPath), mode: 0o755 });
    }
    return packContext(entries);
  });
}

/**
 * The python base: the host's CPython at IMAGE_PYTHON_PATH, its standard library
 * at the path it has here (with its compiled modules, which stay valid because
 * each file keeps its modification time), and the libraries they link. No
 * /etc/passwd: the user is numeric, and a script finds no user database to read.
 */
export async function buildPythonBase(docker: Docker, runtime: PythonRuntime, options: BuildImagesOptions): Promise<BuiltImage> {
  const dockerfile = ['FROM scratch', 'COPY rootfs/ /', `USER ${SANDBOX_UID}:${SANDBOX_UID}`, `ENTRYPOINT ["${IMAGE_PYTHON_PATH}"]`, ''].join('\n');
  const files: Array<{ hostPath: string; imagePath: string; mode: number }> = [
    { hostPath: runtime.binary.hostPath, imagePath: runtime.binary.imagePath, mode: 0o755 },
    ...runtime.libraries.map((library) => ({ hostPath: library.hostPath, imagePath: library.imagePath, mode: 0o755 })),
    ...(await stdlibImageFiles(runtime)).map((name) => ({ hostPath: path.join(runtime.stdlib, name), imagePath: path.posix.join(runtime.stdlib, name), mode: 0o644 })),
  ];
  // The tag hashes every file's path, bytes and time: the time decides whether a compiled module is used.
  const hash = createHash('sha256').update(`python-base/${LAYOUT_VERSION}\n${dockerfile}`);
  const entries: ContextEntry[] = [{ name: 'Dockerfile', content: Buffer.from(dockerfile) }];
  for (const file of files) {
    const content = await readHostFile(file.hostPath);
    const mtime = (await stat(file.hostPath)).mtime;
    hash.update(`${file.imagePath}\n${sha256(content)}\n${mtime.getTime()}\n`);
    entries.push({ name: `rootfs${file.imagePath}`, content, mode: file.mode, mtime });
  }
  const digest = hash.digest('hex');
  return ensureImage(docker, `${PYTHON_BASE_REPOSITORY}:${digest.slice(0, 16)}`, digest, options, () => packContext(entries));
}

/** The base plus one runner's files, hardened alike: same user, no shell, only the runner's own code. */
async function buildRunnerImage(docker: Docker, baseReference: string, runner: RunnerKind, options: BuildImagesOptions): Promise<BuiltImage> {
  const root = options.packageRoot ?? PACKAGE_ROOT;
  const entrypoint = isPythonRunner(runner) ? pythonImageCommand() : [IMAGE_NODE_PATH, `${IMAGE_APP_DIR}/${RUNNER_PROGRAMS[runner].entry}`];
  const dockerfile = [
    `FROM ${baseReference}`,
    `COPY app/ ${IMAGE_APP_DIR}/`,
    `WORKDIR ${IMAGE_APP_DIR}`,
    `USER ${SANDBOX_UID}:${SANDBOX_UID}`,
    `ENTRYPOINT [${entrypoint.map((part) => JSON.stringify(part)).join(', ')}]`,
    '',
  ].join('\n');
  const entries: ContextEntry[] = [{ name: 'Dockerfile', content: Buffer.from(dockerfile) }];
  for (const file of await runnerAppFiles(runner, root)) entries.push({ name: `app/${file.name}`, content: file.content });

  // The context is deterministic, so its hash is the hash of every input,
  // the base image reference included.
  const context = await packContext(entries);
  const digest = sha256(context);
  return ensureImage(docker, `${RUNNER_REPOSITORIES[runner]}:${digest.slice(0, 16)}`, digest, options, async () => context);
}

/** Builds `reference` from the context `makeContext` gives, unless it exists; points the moving tags at it. Shared with cluster-images.ts. */
export async function ensureImage(
  docker: Docker,
  reference: string,
  digest: string,
  options: BuildImagesOptions,
  makeContext: () => Promise<Buffer>,
): Promise<BuiltImage> {
  let built = false;
  if (options.force || !(await imageExists(docker, reference))) {
    const context = await makeContext();
    await runBuild(docker, context, reference, digest, options.onProgress);
    built = true;
  }
  const image = docker.getImage(reference);
  for (const tag of MOVING_TAGS) await image.tag({ repo: reference.slice(0, reference.lastIndexOf(':')), tag });
  const info = await image.inspect();
  return { reference, id: info.Id, sizeBytes: info.Size, built };
}

async function runBuild(
  docker: Docker,
  context: Buffer,
  reference: string,
  digest: string,
  onProgress: ((line: string) => void) | undefined,
): Promise<void> {
  const fail = (message: string): UhlpError =>
    new UhlpError('UHLP_IMAGE_BUILD_FAILED', `building ${reference} failed: ${message}`, { image: reference });
  let stream: NodeJS.ReadableStream;
  try {
    stream = await docker.buildImage(contextStream(context), {
      t: reference,
      labels: { [IMAGE_INPUTS_LABEL]: digest },
      rm: true,
      forcerm: true,
      // Never reach for a registry: the base is local, and scratch is no image.
      pull: false,
    } as Docker.ImageBuildOptions);
  } catch (error) {
    throw fail((error as Error).message);
  }
  const messages = await new Promise<Array<{ stream?: string; error?: string }>>((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (error: Error | null, output: Array<{ stream?: string; error?: string }>) => (error ? reject(fail(error.message)) : resolve(output)),
      (event: { stream?: string }) => {
        const line = event.stream?.trimEnd();
        if (line) onProgress?.(line);
      },
    );
  });
  const error = messages.find((m) => m.error);
  if (error?.error) throw fail(error.error);
}

async function imageExists(docker: Docker, reference: string): Promise<boolean> {
  try {
    await docker.getImage(reference).inspect();
    return true;
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) return false;
    throw error;
  }
}

/** The Node binary without symbols: about a tenth of its size on Debian, same behaviour. */
async function strippedCopy(nodePath: string): Promise<Buffer> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-strip-'));
  try {
    const output = path.join(dir, 'node');
    await run('strip', ['--strip-all', '-o', output, nodePath]);
    return await readFile(output);
  } catch (error) {
    throw new UhlpError('UHLP_IMAGE_BUILD_FAILED', `strip ${nodePath} failed (is binutils installed?): ${(error as Error).message}`, { nodePath });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function readHostFile(file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (error) {
    throw new UhlpError('UHLP_IMAGE_BUILD_FAILED', `cannot read ${file}: ${(error as Error).message}`, { file });
  }
}

function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}
