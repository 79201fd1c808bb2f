/**
 * capabilities.mcp as one predicate over federated tool names: a tool is
 * granted when an `allow` glob matches its full name (`app.fs.read_file`) and
 * no `forbidden` glob does (matched without regard to case, so it wins however
 * a server spells the name). The same predicate filters `tools/list` and every
 * call, so listing and calling agree. A glob's `*` stands for any run of
 * characters and `?` for one, matched in linear time (wildcard-match.ts):
 * neither an app's glob nor a caller's name can make the check slow.
 */
import type { CapabilitiesSpec } from '../../apps/schema/app-definition-schema.js';
import { wildcardMatch } from '../../shared/wildcard-match.js';

export type ToolGrant = (fullName: string) => boolean;

const NOTHING: ToolGrant = () => false;

/** The app's grant. */
export function toolGrant(capabilities: CapabilitiesSpec): ToolGrant {
  const mcp = capabilities.mcp;
  if (mcp === undefined) return NOTHING;
  const { allow, forbidden } = mcp;
  return (fullName) => matchesAny(fullName, allow) && !matchesAny(fullName, forbidden, true);
}

/** Whether any tool of `serverId` (`app.fs`) could be granted: servers no allow glob reaches are never asked for their list. */
export function serverMayBeGranted(capabilities: CapabilitiesSpec, serverId: string): boolean {
  return (capabilities.mcp?.allow ?? []).some((glob) => {
    const [scope, server] = glob.split('.');
    return matchesAny(serverId, [server === undefined ? scope! : `${scope}.${server}`]);
  });
}

/** Which rule refuses `fullName`: `absent` (no mcp capability), `forbidden` (a forbidden glob matches), or `allow` (no allow glob does). */
export function refusalRule(capabilities: CapabilitiesSpec, fullName: string): 'absent' | 'forbidden' | 'allow' {
  const mcp = capabilities.mcp;
  if (mcp === undefined) return 'absent';
  return matchesAny(fullName, mcp.allow) ? 'forbidden' : 'allow';
}

function matchesAny(name: string, globs: readonly string[], ignoreCase = false): boolean {
  return globs.some((glob) => wildcardMatch(name, glob, { questionMark: true, ignoreCase }));
}
