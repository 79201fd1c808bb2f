/**
 * Bare clones of the Git repositories that Kubernetes apps name in
 * `spec.source.git`, one per URL under the data directory. A ref is fetched when
 * an app asks for it, so a new commit is picked up when the AppDefinition changes
 * (or its ref moves and the app is re-read).
 *
 * The URL and ref are written by whoever may create AppDefinitions, so they are
 * treated as hostile data, three times over:
 * - they are checked (git-source.ts): https://, ssh:// or scp-like URLs only, a
 *   ref that is a ref name or commit id, neither able to pass for an option;
 * - git itself allows no other transport (`protocol.allow=never` but https and
 *   ssh, `GIT_ALLOW_PROTOCOL`, `GIT_PROTOCOL_FROM_USER=0`), follows no redirect
 *   (`http.followRedirects=false`), and gets every user value after
 *   `--end-of-options`;
 * - the host is resolved here and every address must pass the SSRF guard of
 *   `tool.web.fetch` (address-guard.ts) unless `allowPrivate` lists it; git is
 *   then pinned to those very addresses (`http.curloptResolve`, or ssh's
 *   `HostName` with the host key still checked under the name), so a DNS answer
 *   that changes after the check (rebinding) cannot move the connection.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { UhlpError } from '../../shared/errors.js';
import { KeyedSemaphore } from '../../shared/keyed-semaphore.js';
import { checkGitSourceRef, GIT_SOURCE_FIELDS, parseGitSourceUrl, type GitSourceUrl } from './git-source.js';
import { gitEnv } from './git-env.js';
import { runGit } from './git-tree.js';
import { defaultLookup, refusedAddress, resolveHost, type LookupAll, type ResolvedAddress } from '../../net/address-guard.js';

const FULL_COMMIT = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

export interface GitSourceCacheOptions {
  /** Where the bare clones live. */
  readonly root: string;
  /**
   * `host:port` pairs (`[::1]:443`) that may resolve to non-public addresses, as
   * `allowPrivate` of the web capability.
   * @defaultValue []
   */
  readonly allowPrivate?: readonly string[];
  /** PEM CA bundle that https sources are checked against. @defaultValue the system's */
  readonly caFile?: string;
  /** DNS resolution; tests point names at loopback here. @defaultValue dns.lookup with `all: true` */
  readonly lookup?: LookupAll;
  /** How long one fetch may take before git is killed. @defaultValue 120000 */
  readonly fetchTimeoutMs?: number;
}

export interface ResolvedSource {
  /** The commit the ref named. */
  readonly commit: string;
  /** The bare repository that holds it. */
  readonly repoDir: string;
}

/**
 * Settings that make git refuse every transport but https and ssh, whatever the
 * URL or the configuration files say. Command-line `-c` wins over every file.
 */
const TRANSPORT_LOCK = [
  '-c', 'protocol.allow=never',
  '-c', 'protocol.https.allow=always',
  '-c', 'protocol.ssh.allow=always',
  '-c', 'http.followRedirects=false',
];

/** Proxies would resolve and connect on git's behalf, past the address check. */
const PROXY_VARIABLES = ['http_proxy', 'https_proxy', 'all_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'no_proxy', 'NO_PROXY'];

/** The environment of source fetches: gitEnv() (no GIT_* of the process), no proxies, no prompts, only https and ssh. */
export function sourceFetchEnv(): Record<string, string> {
  const env = gitEnv({ GIT_PROTOCOL_FROM_USER: '0', GIT_ALLOW_PROTOCOL: 'https:ssh', GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: '/bin/false', SSH_ASKPASS: '/bin/false' });
  for (const name of PROXY_VARIABLES) delete env[name];
  return env;
}

/** Runs git for a source fetch: the transport lock, then `args`. */
export function runSourceGit(cwd: string, args: string[], timeoutMs?: number): Promise<Buffer> {
  return runGit(cwd, [...TRANSPORT_LOCK, ...args], { env: sourceFetchEnv(), ...(timeoutMs !== undefined ? { timeoutMs } : {}) });
}

export class GitSourceCache {
  /** One fetch at a time per bare repository. */
  private readonly locks = new KeyedSemaphore();
  private readonly lookup: LookupAll;

  constructor(private readonly options: GitSourceCacheOptions) {
    this.lookup = options.lookup ?? defaultLookup;
  }

  /** The bare repository for a source URL as checked (created on first use). */
  repoDir(url: string): string {
    return path.join(this.options.root, `${createHash('sha1').update(url).digest('hex')}.git`);
  }

  /**
   * Checks `url` and `ref`, fetches `ref` and returns the commit it names.
   * Throws `UHLP_GIT_SOURCE_INVALID` (naming the field), `UHLP_GIT_SOURCE_ADDRESS_NOT_ALLOWED`,
   * or `UHLP_DEFINITIONS_UNREADABLE` when the fetch fails.
   */
  async resolve(url: string, ref: string): Promise<ResolvedSource> {
    const source = parseGitSourceUrl(url);
    checkGitSourceRef(ref);
    const dir = this.repoDir(source.url);
    const commit = await this.locks.run(dir, async () => {
      if (!existsSync(dir)) {
        await mkdir(dir, { recursive: true });
        await runGit(dir, ['init', '--quiet', '--bare']);
      }
      if (FULL_COMMIT.test(ref)) {
        const known = await runGit(dir, ['cat-file', '-e', '--end-of-options', `${ref}^{commit}`]).then(
          () => true,
          () => false,
        );
        if (known) return ref;
      }
      const pins = await this.pin(source);
      try {
        await runSourceGit(dir, [...pins, 'fetch', '--quiet', '--no-tags', '--no-recurse-submodules', '--end-of-options', source.url, ref], this.options.fetchTimeoutMs ?? 120_000);
        return (await runGit(dir, ['rev-parse', '--verify', '--end-of-options', 'FETCH_HEAD^{commit}'])).toString('utf8').trim();
      } catch (error) {
        throw new UhlpError('UHLP_DEFINITIONS_UNREADABLE', `cannot fetch ${ref} of ${source.url}: ${(error as Error).message}`, { url: source.url, ref });
      }
    });
    return { commit, repoDir: dir };
  }

  /**
   * Resolves the source host, refuses it unless every address may be reached, and
   * returns the `-c` settings that hold git to those addresses.
   */
  private async pin(source: GitSourceUrl): Promise<string[]> {
    let addresses: ResolvedAddress[];
    try {
      addresses = await resolveHost(source.host, this.lookup);
    } catch (error) {
      throw new UhlpError('UHLP_DEFINITIONS_UNREADABLE', `cannot resolve ${source.host}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, {
        url: source.url,
      });
    }
    if (addresses.length === 0) throw new UhlpError('UHLP_DEFINITIONS_UNREADABLE', `${source.host} resolved to no address`, { url: source.url });
    const refused = refusedAddress(source.host, source.port, addresses, this.options.allowPrivate);
    if (refused) {
      throw new UhlpError(
        'UHLP_GIT_SOURCE_ADDRESS_NOT_ALLOWED',
        `${GIT_SOURCE_FIELDS.url}: host ${refused.host} resolves to a ${refused.addressClass} address (${refused.address}), which app sources may not reach; ` +
          `the core's UHLP_GIT_ALLOW_PRIVATE can list ${refused.host}:${refused.port}`,
        { field: GIT_SOURCE_FIELDS.url, ...refused },
      );
    }
    const literal = net.isIP(source.host) !== 0;
    if (source.transport === 'https') {
      const settings = this.options.caFile ? ['-c', `http.sslCAInfo=${this.options.caFile}`] : [];
      if (!literal) {
        // curl's --resolve: the name keeps its place in the TLS check; only the connect is pinned.
        const list = addresses.map(({ address }) => (net.isIPv6(address) ? `[${address}]` : address)).join(',');
        settings.push('-c', `http.curloptResolve=${source.host}:${source.port}:${list}`);
      }
      return settings;
    }
    // ssh connects to the checked address; the host key is still looked up under the name.
    // Both values passed the checks above (a DNS name or an IP), so the shell git runs this through sees no metacharacter.
    const address = addresses[0]!.address;
    const alias = literal ? '' : ` -o HostKeyAlias=${source.host}`;
    return ['-c', `core.sshCommand=ssh -o BatchMode=yes -o ConnectTimeout=20 -o HostName=${address}${alias}`];
  }
}
