/**
 * The environment npm runs with when the core installs a stdio server's package:
 * what npm needs to reach the registry this machine is configured for, and
 * nothing else of the core's (its secrets, its tokens, its settings).
 *
 * What reaching the registry takes is more than npm's own settings: a registry
 * behind a proxy, or a private one with a CA of its own, is trusted through
 * Node's and OpenSSL's variables (`NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE`,
 * `SSL_CERT_DIR`), and npm reads its `cafile` and `registry` from a global
 * npmrc that lies beside the Node it runs on (`<prefix>/etc/npmrc`). A core on
 * a Node of its own (the pinned Node 24 before the machine's on PATH) would
 * run the machine's npm under that Node, whose prefix holds no npmrc: npm then
 * retries TLS failures for a minute and more per request. So the global npmrc
 * passed on is the one the first Node on PATH that has one would give npm.
 *
 * A registry that cannot be reached fails an install in seconds, not minutes:
 * npm's fetch retries are cut to one short retry unless the operator set them.
 */
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';

/** What of the core's environment npm sees, whatever else is set. */
const PASSED = /^(?:PATH|HOME|TMPDIR|(?:HTTPS?|NO|ALL)_PROXY|(?:https?|no|all)_proxy|NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|npm_config_\w+|NPM_CONFIG_\w+)$/;

/**
 * npm's fetch settings when the operator set none: one retry after a second, a
 * request given a minute (npm's own: two retries 10 s to 60 s apart, 5 minutes).
 */
const FAIL_FAST: Readonly<Record<string, string>> = {
  fetch_retries: '1',
  fetch_retry_mintimeout: '1000',
  fetch_retry_maxtimeout: '4000',
  fetch_timeout: '60000',
};

export interface NpmEnvironmentOptions {
  /** More variables to pass, by exact name (`UHLP_MCP_NPM_ENV`). @defaultValue [] */
  readonly extra?: readonly string[];
  /** Whether a file exists (tests). @defaultValue fs.existsSync */
  readonly exists?: (file: string) => boolean;
  /** A path with its links resolved (tests). @defaultValue fs.realpathSync, the path itself when it fails */
  readonly realpath?: (file: string) => string;
}

/** The environment npm installs packages with, from the core's. */
export function npmEnvironment(env: Readonly<Record<string, string | undefined>>, options: NpmEnvironmentOptions = {}): Record<string, string> {
  const extra = new Set(options.extra ?? []);
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && (PASSED.test(name) || extra.has(name))) out[name] = value;
  }
  const set = (setting: string): boolean => Object.keys(out).some((name) => name.toLowerCase() === `npm_config_${setting}`);
  for (const [setting, value] of Object.entries(FAIL_FAST)) if (!set(setting)) out[`npm_config_${setting}`] = value;
  if (!set('globalconfig')) {
    const globalconfig = machineGlobalNpmrc(out.PATH ?? '', options.exists ?? existsSync, options.realpath ?? realpathOrSelf);
    if (globalconfig !== undefined) out.npm_config_globalconfig = globalconfig;
  }
  return out;
}

/**
 * The global npmrc npm should read, when the one beside the Node it runs on
 * (the first `node` on PATH) does not exist: the first that exists beside a
 * later Node on PATH. Undefined when npm finds its own, or none exists.
 */
export function machineGlobalNpmrc(pathList: string, exists: (file: string) => boolean, realpath: (file: string) => string): string | undefined {
  let first = true;
  const seen = new Set<string>();
  for (const dir of pathList.split(path.delimiter)) {
    if (dir === '' || !exists(path.join(dir, 'node'))) continue;
    // npm's prefix is the directory above the bin directory of the Node it runs on (process.execPath, links resolved).
    const npmrc = path.join(path.dirname(path.dirname(realpath(path.join(dir, 'node')))), 'etc', 'npmrc');
    if (seen.has(npmrc)) continue;
    seen.add(npmrc);
    if (exists(npmrc)) return first ? undefined : npmrc;
    first = false;
  }
  return undefined;
}

function realpathOrSelf(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}
