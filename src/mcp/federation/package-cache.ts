/**
 * The npm packages of stdio MCP servers, installed once each into a
 * content-addressed cache: `<root>/<sha512 of the tarball, hex, 32>/` holds the
 * package and its dependencies, read-only, and sandboxes mount it read-only.
 * The tarball's integrity is checked against the AppDefinition's, or the
 * registry's when the app names none; dependencies are checked by npm against
 * the registry's lockfile-less metadata as any install is. Install scripts never
 * run: what a server needs at run time is what its tarballs hold.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { UhlpError } from '../../shared/errors.js';

const run = promisify(execFile);

export interface PackageRequest {
  readonly name: string;
  readonly version: string;
  /** `sha512-<base64>`; the registry's when undefined. */
  readonly integrity?: string;
  /** Which bin entry; the only one when undefined. */
  readonly bin?: string;
}

export interface InstalledPackage {
  /** The cache entry: mount it read-only. */
  readonly dir: string;
  /** The server's entry module, relative to `dir`. */
  readonly entry: string;
  readonly integrity: string;
}

/** npm's own output is not worth keeping past this; an install this long has failed. */
const INSTALL_TIMEOUT_MS = 300_000;

export class PackageCache {
  private readonly installing = new Map<string, Promise<InstalledPackage>>();

  private readonly npm: string;
  private readonly env: Readonly<Record<string, string | undefined>>;

  constructor(
    private readonly root: string,
    options: {
      /** What npm runs with (config.ts: npmEnvironment); PATH finds npm. */
      readonly env: Readonly<Record<string, string | undefined>>;
      /** The npm command. @defaultValue `npm` from the env's PATH */
      readonly npm?: string;
    },
  ) {
    this.npm = options.npm ?? 'npm';
    this.env = options.env;
  }

  /** The installed package, installing it first when the cache does not hold it. */
  install(request: PackageRequest): Promise<InstalledPackage> {
    const key = `${request.name}@${request.version}#${request.integrity ?? ''}#${request.bin ?? ''}`;
    let pending = this.installing.get(key);
    if (pending === undefined) {
      pending = this.doInstall(request).finally(() => this.installing.delete(key));
      this.installing.set(key, pending);
    }
    return pending;
  }

  private async doInstall(request: PackageRequest): Promise<InstalledPackage> {
    const spec = `${request.name}@${request.version}`;
    const integrity = request.integrity ?? (await this.registryIntegrity(spec));
    const dir = path.join(this.root, integrityKey(integrity));
    if (!existsSync(dir)) await this.fill(spec, integrity, dir);
    return { dir, entry: await entryOf(dir, request), integrity };
  }

  private async registryIntegrity(spec: string): Promise<string> {
    const { stdout } = await this.npmRun(['view', spec, 'dist.integrity', '--json'], process.cwd(), spec);
    const integrity = JSON.parse(stdout || 'null') as unknown;
    if (typeof integrity !== 'string' || !integrity.startsWith('sha512-')) {
      throw new UhlpError('UHLP_MCP_PACKAGE_FAILED', `the registry gives no sha512 integrity for ${spec}`, { package: spec });
    }
    return integrity;
  }

  private async fill(spec: string, integrity: string, dir: string): Promise<void> {
    await mkdir(this.root, { recursive: true });
    const staging = await mkdtemp(path.join(this.root, '.staging-'));
    try {
      await this.npmRun(['pack', spec, '--pack-destination', staging, '--json'], staging, spec);
      const tarball = (await readdir(staging)).find((name) => name.endsWith('.tgz'));
      if (tarball === undefined) throw new UhlpError('UHLP_MCP_PACKAGE_FAILED', `npm pack gave no tarball for ${spec}`, { package: spec });
      const tarPath = path.join(staging, tarball);
      const actual = `sha512-${createHash('sha512').update(await readFile(tarPath)).digest('base64')}`;
      if (actual !== integrity) {
        throw new UhlpError('UHLP_MCP_PACKAGE_INTEGRITY', `${spec}: the tarball's integrity is ${actual}, not ${integrity}`, { package: spec, expected: integrity, actual });
      }
      const prefix = path.join(staging, 'pkg');
      await mkdir(prefix);
      await this.npmRun(
        ['install', '--prefix', prefix, '--no-save', '--no-package-lock', '--ignore-scripts', '--omit=dev', '--no-audit', '--no-fund', tarPath],
        prefix,
        spec,
      );
      await makeReadOnly(prefix);
      try {
        await rename(prefix, dir);
      } catch (error) {
        // Another core filled the same entry first.
        if (!existsSync(dir)) throw error;
      }
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }

  private async npmRun(args: string[], cwd: string, spec: string): Promise<{ stdout: string }> {
    try {
      return await run(this.npm, args, { cwd, timeout: INSTALL_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024, env: { ...this.env, npm_config_update_notifier: 'false' } });
    } catch (error) {
      const stderr = String((error as { stderr?: unknown }).stderr ?? '');
      const reason = npmReason(stderr) ?? ((error as { killed?: boolean }).killed ? `no answer within ${INSTALL_TIMEOUT_MS / 1000} s` : (error as Error).message.split('\n')[0]!);
      throw new UhlpError('UHLP_MCP_PACKAGE_FAILED', `npm ${args[0]} ${spec} failed: ${reason.slice(0, 500)}`, { package: spec });
    }
  }
}

/**
 * Why npm failed, from its error output: its error code and the first line that
 * says more (`code ECONNREFUSED: FetchError: request to … failed, reason: …`),
 * without the stack, the object dump and the advice around them.
 */
export function npmReason(stderr: string): string | undefined {
  const lines = stderr
    .split('\n')
    .map((line) => line.replace(/^npm (?:error|ERR!) ?/, ''))
    .filter((line) => line.trim() !== '' && !/^\s+at |^\s*[{}]|^\s+\w+: |^A complete log|^If you are behind a proxy|^(?:syscall|errno) /.test(line));
  const code = lines.find((line) => line.startsWith('code '));
  const detail = lines.find((line) => !line.startsWith('code '));
  if (code === undefined && detail === undefined) return undefined;
  return [code, detail?.trim()].filter(Boolean).join(': ');
}

/** The cache directory name of an integrity: hex of its digest, 32 characters (128 bits). */
export function integrityKey(integrity: string): string {
  return Buffer.from(integrity.slice('sha512-'.length), 'base64').toString('hex').slice(0, 32);
}

/** The bin entry of the installed package, relative to the cache entry. */
async function entryOf(dir: string, request: PackageRequest): Promise<string> {
  const packageDir = path.join('node_modules', ...request.name.split('/'));
  const manifest = JSON.parse(await readFile(path.join(dir, packageDir, 'package.json'), 'utf8')) as { bin?: string | Record<string, string>; main?: string };
  const bins = typeof manifest.bin === 'string' ? { [request.name]: manifest.bin } : (manifest.bin ?? {});
  const names = Object.keys(bins);
  const chosen = request.bin ?? (names.length === 1 ? names[0] : undefined);
  const file = chosen !== undefined ? bins[chosen] : undefined;
  if (file === undefined) {
    throw new UhlpError('UHLP_MCP_PACKAGE_FAILED', `${request.name}: name one of its bin entries (${names.join(', ') || 'none'})`, { package: request.name, bins: names });
  }
  const entry = path.posix.normalize(path.posix.join(packageDir.split(path.sep).join('/'), file));
  if (entry.startsWith('..')) throw new UhlpError('UHLP_MCP_PACKAGE_FAILED', `${request.name}: its bin leaves the package`, { package: request.name });
  return entry;
}

async function makeReadOnly(dir: string): Promise<void> {
  for (const name of await readdir(dir, { recursive: true })) {
    const file = path.join(dir, name);
    const info = await stat(file).catch(() => undefined);
    if (info?.isFile()) await chmod(file, 0o444);
  }
}
