/**
 * The URL a client on this machine uses for a listener's URL: one that listens
 * on every address (`0.0.0.0`, `[::]`) is reached through loopback (sandboxes
 * calling /mcp, a callback URL given before a public one is configured).
 */
export function loopbackUrl(url: string): string {
  return url.replace('://0.0.0.0:', '://127.0.0.1:').replace('://[::]:', '://[::1]:');
}
