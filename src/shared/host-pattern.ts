/**
 * Host allowlist patterns, shared by the capability check in the core and the
 * guarded fetch, so that both agree on what `allowHosts` admits: an exact name or
 * IP literal, or `*.domain` for any subdomain (not the domain itself).
 */

/** Lower case, no IPv6 brackets, no trailing dot of a fully qualified name. */
export function bareHost(hostname: string): string {
  const lower = hostname.toLowerCase();
  const unbracketed = lower.startsWith('[') && lower.endsWith(']') ? lower.slice(1, -1) : lower;
  return unbracketed.endsWith('.') ? unbracketed.slice(0, -1) : unbracketed;
}

export function hostMatches(hostname: string, pattern: string): boolean {
  const host = bareHost(hostname);
  const wanted = bareHost(pattern);
  if (wanted.startsWith('*.')) return host.endsWith(wanted.slice(1)) && host.length > wanted.length - 1;
  return host === wanted;
}
