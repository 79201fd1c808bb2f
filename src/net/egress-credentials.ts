/**
 * Credentials the guarded fetch adds to a request on its way out: a header or a
 * query parameter for one origin (and path prefix, and methods). They are
 * applied to each hop after the hop passed every check (allowlist, method,
 * address), so a refused request never carried one, and chosen again for every
 * hop, so a redirect to another origin never carries one. The URL a caller is
 * told (the answer's `url`, `redirects`) is the one without them.
 */

export interface EgressCredential {
  /** `https://api.example.com:8443`: scheme, host and port, matched exactly. */
  readonly origin: string;
  /** Path prefix the hop's path must start with. @defaultValue '/' */
  readonly pathPrefix?: string;
  /** Upper-case methods that carry it. @defaultValue every method */
  readonly methods?: readonly string[];
  /** Exactly one of header and query. */
  readonly header?: string;
  readonly query?: string;
  /** What the header or parameter carries, ready to send (`Bearer …`). */
  readonly value: string;
}

export interface CredentialedHop {
  /** The URL to send (with any query credential). */
  readonly url: URL;
  readonly headers: Record<string, string>;
  /** Indexes of the credentials this hop carries. */
  readonly applied: number[];
}

/** The hop as sent: `headers` and `url` with every credential that matches the hop. */
export function withCredentials(url: URL, method: string, headers: Record<string, string>, credentials: readonly EgressCredential[] | undefined): CredentialedHop {
  if (credentials === undefined || credentials.length === 0) return { url, headers, applied: [] };
  let sent = url;
  let out = headers;
  const applied: number[] = [];
  credentials.forEach((credential, index) => {
    if (!credentialApplies(credential, url, method)) return;
    applied.push(index);
    if (credential.header !== undefined) {
      // The script's own header of that name gives way: the credential is what the rule says.
      const name = credential.header.toLowerCase();
      out = { ...Object.fromEntries(Object.entries(out).filter(([key]) => key.toLowerCase() !== name)), [name]: credential.value };
    } else if (credential.query !== undefined) {
      if (sent === url) sent = new URL(url.href);
      sent.searchParams.set(credential.query, credential.value);
    }
  });
  return { url: sent, headers: out, applied };
}

/** Whether a hop to `url` with `method` carries the credential. */
export function credentialApplies(credential: Omit<EgressCredential, 'value'>, url: URL, method: string): boolean {
  if (url.origin !== credential.origin) return false;
  if (credential.methods !== undefined && !credential.methods.includes(method)) return false;
  return pathUnder(url.pathname, credential.pathPrefix ?? '/');
}

/**
 * `/v1/` covers `/v1/x`; `/v1` covers `/v1` and `/v1/x` but not `/v10`. The
 * path compared is the URL's normalized one, so `/v1/../admin` is `/admin`.
 */
function pathUnder(path: string, prefix: string): boolean {
  if (prefix === '/' || prefix === '') return true;
  if (prefix.endsWith('/')) return path.startsWith(prefix);
  return path === prefix || path.startsWith(`${prefix}/`);
}
