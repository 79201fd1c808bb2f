/**
 * What an AppDefinition's `spec.source.git` may name. The URL, ref and path are
 * written by whoever may create AppDefinitions, and the core hands them to
 * `git`, so they must be data and never options or local access:
 *
 * - `url`: `https://host[:port]/path`, `ssh://[user@]host[:port]/path` or the
 *   scp-like `[user@]host:path`, nothing else. Refused: `file://` and local
 *   paths (they read the core's own disk), `ext::`/`fd::` and any other
 *   `<transport>::` helper (they run commands), plain `http://` and `git://`
 *   (unauthenticated), anything starting with `-` (an option to git), embedded
 *   passwords, and whitespace or control characters.
 * - `ref`: `HEAD`, a full commit id, or a ref name by git's rules, restricted
 *   to `A-Z a-z 0-9 . _ / -` and never starting with `-`: a fetch takes it as a
 *   refspec, so `:`, `*`, `^`, `+` and options are out.
 * - `path`: a relative directory inside the repository, without `.`/`..`
 *   segments.
 *
 * One checker serves the validator (and through it the operator's status), the
 * core's registry, and the fetch itself (defence in depth).
 */
import net from 'node:net';
import { UhlpError } from '../../shared/errors.js';

export const GIT_SOURCE_FIELDS = {
  url: 'spec.source.git.url',
  ref: 'spec.source.git.ref',
  path: 'spec.source.git.path',
} as const;

export type GitSourceField = keyof typeof GIT_SOURCE_FIELDS;

/** A source URL that passed the checks, in the form handed to git. */
export interface GitSourceUrl {
  /** The URL given to git: the normalized `https://` URL, or the ssh URL as checked. */
  readonly url: string;
  readonly transport: 'https' | 'ssh';
  /** Host name or IP address, lower case, without IPv6 brackets. */
  readonly host: string;
  readonly port: number;
}

const MAX_URL = 2048;
const MAX_REF = 255;
const MAX_PATH = 1024;
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const HOSTNAME = new RegExp(`^(?=.{1,253}$)${LABEL}(?:\\.${LABEL})*$`, 'i');
const USER = /^[A-Za-z0-9._~][A-Za-z0-9._~-]{0,63}$/;
/** Whitespace, C0 and C1 controls, DEL: never part of a URL git should see. */
const CONTROL_OR_SPACE = /[\s\u0000-\u001f\u007f-\u009f]/u;
const COMMIT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const REF_CHARS = /^[A-Za-z0-9._/-]+$/;
/** `[user@]host:path`: host without `/` or `:` (git reads a `/` before the first `:` as a local path), or a bracketed IPv6 literal. */
const SCP_LIKE = /^(?:([^@/:[\]]+)@)?(\[[^\]]*\]|[^/:[\]@]+):(.+)$/s;

function refused(field: GitSourceField, value: unknown, reason: string): UhlpError {
  return new UhlpError('UHLP_GIT_SOURCE_INVALID', `${GIT_SOURCE_FIELDS[field]} ${reason}`, {
    field: GIT_SOURCE_FIELDS[field],
    value: typeof value === 'string' ? value.slice(0, 200) : typeof value,
  });
}

/** Checks a source URL; throws `UHLP_GIT_SOURCE_INVALID` naming `spec.source.git.url`. */
export function parseGitSourceUrl(url: unknown): GitSourceUrl {
  if (typeof url !== 'string' || url === '') throw refused('url', url, 'must be a non-empty string');
  if (url.length > MAX_URL) throw refused('url', url, `is longer than ${MAX_URL} characters`);
  if (url.startsWith('-')) throw refused('url', url, 'starts with "-", which git would read as an option');
  if (CONTROL_OR_SPACE.test(url)) throw refused('url', url, 'contains whitespace or control characters');
  if (url.includes('\\')) throw refused('url', url, 'contains a backslash');
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url)?.[1]?.toLowerCase();
  if (scheme === 'https') return parseHttps(url);
  if (scheme === 'ssh') return parseSshUrl(url);
  if (scheme === 'http') throw refused('url', url, 'uses plain http://, which anyone on the way can change: use https://');
  if (scheme !== undefined) throw refused('url', url, `uses ${scheme}://; app sources are fetched over https:// or ssh:// only`);
  if (/^[A-Za-z0-9+.-]+::/.test(url)) throw refused('url', url, 'uses the <transport>::<address> syntax of git remote helpers, which run programs');
  if (url.startsWith('/') || url.startsWith('.') || url.startsWith('~')) {
    throw refused('url', url, 'is a local path; app sources are fetched over https:// or ssh:// only');
  }
  return parseScpLike(url);
}

function parseHttps(url: string): GitSourceUrl {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw refused('url', url, 'is not a valid URL');
  }
  if (parsed.password !== '') throw refused('url', url, 'embeds a password; give the core credentials another way (a credential helper)');
  if (parsed.username !== '' && !USER.test(decodeURIComponent(parsed.username))) throw refused('url', url, 'has a user name git cannot take safely');
  if (parsed.search !== '' || parsed.hash !== '' || url.includes('?') || url.includes('#')) throw refused('url', url, 'has a query or fragment');
  const host = checkHost(parsed.hostname, url);
  // The URL as the WHATWG parser understood it, so git and the address check agree on the host.
  return { url: parsed.href, transport: 'https', host, port: parsed.port === '' ? 443 : Number(parsed.port) };
}

function parseSshUrl(url: string): GitSourceUrl {
  // ssh://[user@]host[:port]/path, read by hand: WHATWG's opaque hosts of non-special schemes are too lax.
  const match = /^ssh:\/\/(?:([^@/]*)@)?(\[[^\]]*\]|[^/:@]*)(?::([^/]*))?(\/.*)$/is.exec(url);
  if (!match) throw refused('url', url, 'is not ssh://[user@]host[:port]/path');
  const [, user, rawHost = '', rawPort, repoPath = ''] = match;
  if (user !== undefined && !USER.test(user)) throw refused('url', url, 'has a user name git cannot take safely');
  const host = checkHost(rawHost, url);
  let port = 22;
  if (rawPort !== undefined) {
    if (!/^\d{1,5}$/.test(rawPort) || Number(rawPort) < 1 || Number(rawPort) > 65535) throw refused('url', url, `has a bad port "${rawPort}"`);
    port = Number(rawPort);
  }
  checkRepoPath(repoPath, url);
  return { url, transport: 'ssh', host, port };
}

function parseScpLike(url: string): GitSourceUrl {
  const match = SCP_LIKE.exec(url);
  if (!match) throw refused('url', url, 'is not an https://, ssh:// or scp-like user@host:path URL (local paths are refused)');
  const [, user, rawHost = '', repoPath = ''] = match;
  if (user !== undefined && !USER.test(user)) throw refused('url', url, 'has a user name git cannot take safely');
  const host = checkHost(rawHost, url);
  if (repoPath.startsWith(':')) throw refused('url', url, 'uses the <transport>::<address> syntax of git remote helpers, which run programs');
  checkRepoPath(repoPath, url);
  return { url, transport: 'ssh', host, port: 22 };
}

/** A DNS name or an IP literal (IPv6 in brackets), returned bare and lower case. */
function checkHost(raw: string, url: string): string {
  const bracketed = raw.startsWith('[') && raw.endsWith(']');
  const host = (bracketed ? raw.slice(1, -1) : raw).toLowerCase();
  if (bracketed ? !net.isIPv6(host) : !HOSTNAME.test(host)) throw refused('url', url, `has a host "${raw.slice(0, 80)}" that is not a DNS name or IP address`);
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

function checkRepoPath(repoPath: string, url: string): void {
  if (repoPath === '' || repoPath === '/') throw refused('url', url, 'names no repository path');
  if (repoPath.startsWith('-')) throw refused('url', url, 'has a repository path starting with "-"');
}

/** Checks a ref; throws `UHLP_GIT_SOURCE_INVALID` naming `spec.source.git.ref`. */
export function checkGitSourceRef(ref: unknown): string {
  if (typeof ref !== 'string' || ref === '') throw refused('ref', ref, 'must be a non-empty string');
  if (ref === 'HEAD' || COMMIT_ID.test(ref)) return ref;
  if (ref.length > MAX_REF) throw refused('ref', ref, `is longer than ${MAX_REF} characters`);
  if (ref.startsWith('-')) throw refused('ref', ref, 'starts with "-", which git would read as an option');
  if (!REF_CHARS.test(ref)) throw refused('ref', ref, 'must be HEAD, a full commit id, or a branch or tag name of letters, digits, ".", "_", "/" and "-"');
  const components = ref.split('/');
  if (ref.startsWith('/') || ref.endsWith('/') || components.some((c) => c === '')) throw refused('ref', ref, 'has an empty path component');
  if (ref.includes('..') || ref.endsWith('.') || components.some((c) => c.startsWith('.') || c.endsWith('.lock'))) {
    throw refused('ref', ref, 'is not a valid ref name (git check-ref-format)');
  }
  return ref;
}

/** Checks the app's directory in the repository; throws `UHLP_GIT_SOURCE_INVALID` naming `spec.source.git.path`. */
export function checkGitSourcePath(sourcePath: unknown): string {
  if (typeof sourcePath !== 'string' || sourcePath === '') throw refused('path', sourcePath, 'must be a non-empty string');
  if (sourcePath.length > MAX_PATH) throw refused('path', sourcePath, `is longer than ${MAX_PATH} characters`);
  if (CONTROL_OR_SPACE.test(sourcePath.replace(/ /g, '')) || sourcePath.includes('\\')) throw refused('path', sourcePath, 'contains control characters or a backslash');
  if (sourcePath.startsWith('/')) throw refused('path', sourcePath, 'must be relative to the repository');
  if (sourcePath.startsWith('-') || sourcePath.startsWith(':')) throw refused('path', sourcePath, 'must not start with "-" or ":"');
  const trimmed = sourcePath.replace(/\/+$/, '');
  if (trimmed.split('/').some((segment) => segment === '' || segment === '.' || segment === '..')) {
    throw refused('path', sourcePath, 'must be a directory inside the repository, without empty, "." or ".." segments');
  }
  return trimmed;
}

/** Every problem of a `spec.source.git`, as (field, message) pairs; empty when it is fine. */
export function gitSourceProblems(git: { url?: unknown; ref?: unknown; path?: unknown }): Array<{ field: GitSourceField; code: string; message: string }> {
  const problems: Array<{ field: GitSourceField; code: string; message: string }> = [];
  const check = (field: GitSourceField, run: () => unknown): void => {
    try {
      run();
    } catch (error) {
      if (!(error instanceof UhlpError)) throw error;
      // The field is named by where the problem is reported; the message says what is wrong with it.
      const prefix = `${GIT_SOURCE_FIELDS[field]} `;
      problems.push({ field, code: error.code, message: error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message });
    }
  };
  check('url', () => parseGitSourceUrl(git.url));
  if (git.ref !== undefined) check('ref', () => checkGitSourceRef(git.ref));
  if (git.path !== undefined) check('path', () => checkGitSourcePath(git.path));
  return problems;
}
