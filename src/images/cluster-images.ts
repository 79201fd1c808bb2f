/**
 * The images the Helm chart runs, built locally like the sandbox images (no registry,
 * tags are hashes of the inputs, no shell, a non-root user):
 *
 *   uhlp/uhlp:<hash>    the node base plus the `uhlp` command (bin/, dist/), the production
 *                       dependencies of package-lock.json, and Debian's git with its https
 *                       helper and the CA bundle (the core fetches the Git sources of
 *                       AppDefinitions). One image for the core (`uhlp serve`) and the
 *                       operator (`uhlp operator`).
 *   uhlp/redis:<hash>   FROM scratch: Debian's redis-server, and redis-cli for the chart's readiness
 *                       probe (a PING, not a bare TCP check), with exactly the libraries they link.
 */
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { UhlpError } from '../shared/errors.js';
import { packContext, type ContextEntry } from './build-context.js';
import { buildNodeBase, ensureImage, SANDBOX_UID, type BuildImagesOptions, type BuiltImage } from './build-images.js';
import { IMAGE_NODE_PATH, parseLdd, type RuntimeFile } from './node-runtime.js';
import { pinnedNodeBinary } from './pinned-node.js';
import { PACKAGE_ROOT } from './runner-files.js';

const run = promisify(execFile);

export const CORE_REPOSITORY = 'uhlp/uhlp';
export const REDIS_REPOSITORY = 'uhlp/redis';
/** Where the uhlp package sits in the core image. */
export const CORE_APP_DIR = '/app';

/** Bumped whenever the layout below changes, so old tags stop matching. */
const LAYOUT_VERSION = '1';
/** Build output the command does not load, and generation-time code (the chart and dashboard generators). */
const SKIPPED = /(\.map|\.d\.[cm]?ts|\.tsbuildinfo)$|^dist\/chart\//;
/** The git programs the core runs: git itself and its http(s) transport. */
const GIT_PROGRAMS = ['/usr/bin/git', '/usr/lib/git-core/git-remote-http'];
const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
const REDIS_SERVER = '/usr/bin/redis-server';
const REDIS_CLI = '/usr/bin/redis-cli';

export interface ClusterImages {
  readonly nodeBase: BuiltImage;
  readonly core: BuiltImage;
  readonly redis: BuiltImage;
}

export interface ClusterImagesOptions extends BuildImagesOptions {
  /** Build the Redis image too. @defaultValue true */
  readonly redis?: boolean;
}

export async function buildClusterImages(options: ClusterImagesOptions = {}): Promise<ClusterImages> {
  const docker = options.docker ?? new Docker();
  const nodeBase = await buildNodeBase(docker, options);
  const core = await buildCoreImage(docker, nodeBase.reference, options);
  const redis = await buildRedisImage(docker, options);
  return { nodeBase, core, redis };
}

async function buildCoreImage(docker: Docker, baseReference: string, options: BuildImagesOptions): Promise<BuiltImage> {
  const root = options.packageRoot ?? PACKAGE_ROOT;
  const dockerfile = [
    `FROM ${baseReference}`,
    'COPY rootfs/ /',
    `COPY app/ ${CORE_APP_DIR}/`,
    `WORKDIR ${CORE_APP_DIR}`,
    `USER ${SANDBOX_UID}:${SANDBOX_UID}`,
    // git and its helpers live in /usr/bin and /usr/lib/git-core (git's compiled exec path).
    'ENV PATH=/usr/local/bin:/usr/bin HOME=/tmp',
    `ENTRYPOINT ["${IMAGE_NODE_PATH}", "${CORE_APP_DIR}/bin/uhlp.js"]`,
    '',
  ].join('\n');
  const entries: ContextEntry[] = [{ name: 'Dockerfile', content: Buffer.from(dockerfile) }];
  for (const file of await coreAppFiles(root)) entries.push({ name: `app/${file.name}`, content: file.content, mode: file.mode });
  // The node base holds the C library and the loader already: only what git adds is copied.
  const nodeLibraries = new Set(parseLdd((await run('ldd', [options.nodePath ?? (await pinnedNodeBinary())])).stdout).map((file) => file.imagePath));
  const gitFiles = new Map<string, RuntimeFile>();
  for (const program of GIT_PROGRAMS) {
    gitFiles.set(program, { hostPath: program, imagePath: program });
    for (const library of await linkedLibraries(program)) if (!nodeLibraries.has(library.imagePath)) gitFiles.set(library.imagePath, library);
  }
  for (const file of [...gitFiles.values()].sort((a, b) => a.imagePath.localeCompare(b.imagePath))) {
    entries.push({ name: `rootfs${file.imagePath}`, content: await readHostFile(file.hostPath), mode: 0o755 });
  }
  // git finds `remote-https` as a program of its exec path; on Debian it is the same file as remote-http.
  entries.push({ name: 'rootfs/usr/lib/git-core/git-remote-https', content: await readHostFile('/usr/lib/git-core/git-remote-http'), mode: 0o755 });
  entries.push({ name: `rootfs${CA_BUNDLE}`, content: await readHostFile(CA_BUNDLE) });
  const context = await packContext(entries);
  const digest = createHash('sha256').update(`core/${LAYOUT_VERSION}\n`).update(context).digest('hex');
  return ensureImage(docker, `${CORE_REPOSITORY}:${digest.slice(0, 16)}`, digest, options, async () => context);
}

async function buildRedisImage(docker: Docker, options: BuildImagesOptions): Promise<BuiltImage> {
  const dockerfile = [
    'FROM scratch',
    'COPY rootfs/ /',
    `USER ${SANDBOX_UID}:${SANDBOX_UID}`,
    'WORKDIR /data',
    // The binary picks its role from its name (redis-server, redis-check-rdb): it must keep this path.
    `ENTRYPOINT ["${REDIS_SERVER}"]`,
    '',
  ].join('\n');
  const entries: ContextEntry[] = [
    { name: 'Dockerfile', content: Buffer.from(dockerfile) },
    { name: 'rootfs/etc/passwd', content: Buffer.from(`root:x:0:0:root:/:/nonexistent\nredis:x:${SANDBOX_UID}:${SANDBOX_UID}:redis:/data:/nonexistent\n`) },
    { name: 'rootfs/etc/group', content: Buffer.from(`root:x:0:\nredis:x:${SANDBOX_UID}:\n`) },
    { name: 'rootfs/data', mode: 0o1777 },
    { name: 'rootfs/tmp', mode: 0o1777 },
    { name: `rootfs${REDIS_SERVER}`, content: await readHostFile(REDIS_SERVER), mode: 0o755 },
    { name: `rootfs${REDIS_CLI}`, content: await readHostFile(REDIS_CLI), mode: 0o755 },
  ];
  const libraries = new Map<string, RuntimeFile>();
  for (const program of [REDIS_SERVER, REDIS_CLI]) {
    for (const library of await linkedLibraries(program)) libraries.set(library.imagePath, library);
  }
  for (const library of [...libraries.values()].sort((a, b) => a.imagePath.localeCompare(b.imagePath))) {
    entries.push({ name: `rootfs${library.imagePath}`, content: await readHostFile(library.hostPath), mode: 0o755 });
  }
  const context = await packContext(entries);
  const digest = createHash('sha256').update(`redis/${LAYOUT_VERSION}\n`).update(context).digest('hex');
  return ensureImage(docker, `${REDIS_REPOSITORY}:${digest.slice(0, 16)}`, digest, options, async () => context);
}

async function linkedLibraries(program: string): Promise<RuntimeFile[]> {
  try {
    return parseLdd((await run('ldd', [program])).stdout);
  } catch (error) {
    throw new UhlpError('UHLP_IMAGE_BUILD_FAILED', `cannot list the libraries of ${program} (is its Debian package installed?): ${(error as Error).message}`, { program });
  }
}

interface AppFile {
  readonly name: string;
  readonly content: Buffer;
  readonly mode: number;
}

/**
 * package.json, bin/, dist/ and the production packages: the node_modules entries of
 * package-lock.json that are not dev-only (exactly what `npm ci --omit=dev` installs),
 * found on disk. An optional package missing here (another platform's) is skipped.
 */
export async function coreAppFiles(root: string = PACKAGE_ROOT): Promise<AppFile[]> {
  const files: AppFile[] = [];
  const add = async (relative: string): Promise<void> => {
    const absolute = path.join(root, relative);
    const info = await stat(absolute).catch(() => undefined);
    if (!info) throw new UhlpError('UHLP_IMAGE_BUILD_FAILED', `${absolute} is missing; run \`npm ci\` and \`npm run build\` first`, { path: absolute });
    const names = info.isDirectory() ? (await readdir(absolute, { recursive: true })).map((name) => path.join(relative, name)) : [relative];
    for (const name of names) {
      const posix = name.split(path.sep).join('/');
      if (SKIPPED.test(posix)) continue;
      const fileInfo = await stat(path.join(root, name));
      if (!fileInfo.isFile()) continue;
      files.push({ name: posix, content: await readFile(path.join(root, name)), mode: fileInfo.mode & 0o111 ? 0o755 : 0o644 });
    }
  };
  await add('package.json');
  await add('bin');
  await add('dist');
  const lock = JSON.parse(await readFile(path.join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean; link?: boolean; optional?: boolean }>;
  };
  for (const [location, entry] of Object.entries(lock.packages)) {
    if (!location.startsWith('node_modules/') || entry.dev || entry.link) continue;
    // Nested copies (node_modules/a/node_modules/b) come with their parent's directory.
    if (location.slice('node_modules/'.length).includes('/node_modules/')) continue;
    if (entry.optional && !(await stat(path.join(root, location)).catch(() => undefined))) continue;
    await addPackage(root, location, files);
  }
  return files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Every file of a package directory (nested node_modules included), without source maps. */
async function addPackage(root: string, location: string, files: AppFile[]): Promise<void> {
  const absolute = path.join(root, location);
  const info = await stat(absolute).catch(() => undefined);
  if (!info) throw new UhlpError('UHLP_IMAGE_BUILD_FAILED', `${location} is not installed; run \`npm ci\``, { path: absolute });
  for (const name of await readdir(absolute, { recursive: true })) {
    const relative = path.join(location, name).split(path.sep).join('/');
    if (/\.(map|tsbuildinfo)$/.test(relative)) continue;
    const fileInfo = await stat(path.join(root, relative));
    if (!fileInfo.isFile()) continue;
    files.push({ name: relative, content: await readFile(path.join(root, relative)), mode: fileInfo.mode & 0o111 ? 0o755 : 0o644 });
  }
}

async function readHostFile(file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (error) {
    throw new UhlpError('UHLP_IMAGE_BUILD_FAILED', `cannot read ${file}: ${(error as Error).message}`, { file });
  }
}
