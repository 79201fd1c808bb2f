/**
 * capabilities.mcp as one predicate over federated tool names: a tool is
 * granted when an `allow` glob matches its full name (`app.fs.read_file`) and
 * no `forbidden` glob does (matched without regard to case, so it wins however
 * a server spells the name). The same predicate filters `tools/list` and every
 * call, so listing and calling agree.
 */
import picomatch from 'picomatch';
import type { CapabilitiesSpec, McpCapability } from '../../apps/schema/app-definition-schema.js';

export type ToolGrant = (fullName: string) => boolean;

const compiled = new WeakMap<McpCapability, ToolGrant>();
const NOTHING: ToolGrant = () => false;

/** The app's grant, compiled once per capability object (one per loaded app). */
export function toolGrant(capabilities: CapabilitiesSpec): ToolGrant {
  const mcp = capabilities.mcp;
  if (mcp === undefined) return NOTHING;
  let grant = compiled.get(mcp);
  if (grant === undefined) {
    const allow = picomatch(mcp.allow, { dot: true });
    const forbidden = mcp.forbidden.length > 0 ? picomatch(mcp.forbidden, { dot: true, nocase: true }) : NOTHING;
    grant = (fullName) => allow(fullName) && !forbidden(fullName);
    compiled.set(mcp, grant);
  }
  return grant;
}

/** Whether any tool of `serverId` (`app.fs`) could be granted: servers no allow glob reaches are never asked for their list. */
export function serverMayBeGranted(capabilities: CapabilitiesSpec, serverId: string): boolean {
  return (capabilities.mcp?.allow ?? []).some((glob) => {
    const [scope, server] = glob.split('.');
    return server === undefined ? picomatch(scope!, { dot: true })(serverId) : picomatch(`${scope}.${server}`, { dot: true })(serverId);
  });
}

/** Which rule refuses `fullName`: `absent` (no mcp capability), `forbidden` (a forbidden glob matches), or `allow` (no allow glob does). */
export function refusalRule(capabilities: CapabilitiesSpec, fullName: string): 'absent' | 'forbidden' | 'allow' {
  const mcp = capabilities.mcp;
  if (mcp === undefined) return 'absent';
  return picomatch(mcp.allow, { dot: true })(fullName) ? 'forbidden' : 'allow';
}
