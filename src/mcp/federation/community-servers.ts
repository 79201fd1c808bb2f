/**
 * Community MCP servers: the servers the operator installs for every app
 * (core configuration, UHLP_MCP_COMMUNITY_FILE; the Helm chart's
 * `mcp.community`), offered as `community.<server>.<tool>` to the apps whose
 * capabilities.mcp grant them. A stdio community server runs in pools of its
 * own, one per app that uses it, so no server process sees another app's calls.
 */
import { readFileSync } from 'node:fs';
import { Type, type Static } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import { parse } from 'yaml';
import { McpServerSpec, McpStdioSpec, PoolSpec } from '../../apps/schema/app-definition-schema.js';
import { UhlpError } from '../../shared/errors.js';

export const CommunityServerSpec = Type.Object(
  {
    name: McpServerSpec.properties.name,
    stdio: Type.Optional(Type.Omit(McpStdioSpec, ['pool', 'script'], { additionalProperties: false, description: 'An npm package run in sandboxes, one pool per app that uses it.' })),
    http: McpServerSpec.properties.http,
    timeoutMs: McpServerSpec.properties.timeoutMs,
    maxOutputBytes: McpServerSpec.properties.maxOutputBytes,
    pool: Type.Object(
      {
        minWarm: Type.Integer({ minimum: 0, maximum: 100, default: 0, description: "Warm sandboxes per app; 0 starts one at an app's first call." }),
        maxSize: Type.Integer({ minimum: 1, maximum: 100, default: 2 }),
        maxUses: Type.Integer({ minimum: 1, default: 1000 }),
        idleTtlSeconds: Type.Integer({ minimum: 1, default: 300 }),
        limits: Type.Object(PoolSpec.properties.limits.properties, { additionalProperties: false, default: {} }),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false },
);
export type CommunityServerSpec = Static<typeof CommunityServerSpec>;

const CommunityFile = Type.Object({ servers: Type.Array(CommunityServerSpec, { maxItems: 64, default: [] }) }, { additionalProperties: false });
const checkFile = TypeCompiler.Compile(CommunityFile);

/** The community servers of the core's configuration file; none without one. */
export function loadCommunityServers(file: string | undefined): readonly CommunityServerSpec[] {
  if (file === undefined) return [];
  const raw = Value.Default(CommunityFile, parse(readFileSync(file, 'utf8')) ?? {}) as unknown;
  if (!checkFile.Check(raw)) {
    const first = checkFile.Errors(raw).First();
    throw new UhlpError('UHLP_CONFIG_INVALID', `UHLP_MCP_COMMUNITY_FILE ${file}: ${first?.path ?? '/'}: ${first?.message ?? 'invalid'}`, { file });
  }
  const names = new Set<string>();
  for (const server of raw.servers) {
    if ((server.stdio === undefined) === (server.http === undefined)) throw new UhlpError('UHLP_CONFIG_INVALID', `community server ${server.name}: declare exactly one of stdio and http`, { file });
    if (server.stdio !== undefined && server.stdio.package === undefined) throw new UhlpError('UHLP_CONFIG_INVALID', `community server ${server.name}: a stdio server names its package`, { file });
    if (names.has(server.name)) throw new UhlpError('UHLP_CONFIG_INVALID', `community server ${server.name} is declared twice`, { file });
    names.add(server.name);
  }
  return raw.servers;
}

/**
 * Refuses community servers whose headers name a secret the secrets file's
 * community section does not hold: the operator learns it at start, not from a
 * remote server refusing every app's calls.
 */
export function checkCommunitySecrets(servers: readonly CommunityServerSpec[], hasSecret: (name: string, key: string) => boolean): void {
  for (const server of servers) {
    server.http?.headers.forEach((header, i) => {
      const { name, key } = header.secretRef;
      if (!hasSecret(name, key)) {
        throw new UhlpError('UHLP_CONFIG_INVALID', `community server ${server.name}: http.headers[${i}].secretRef names secret "${name}" key "${key}", which the community section of UHLP_MCP_SECRETS_FILE does not hold`, {
          field: `servers.${server.name}.http.headers[${i}].secretRef`,
        });
      }
    });
  }
}

/** The pool one app's sandboxes of a stdio community server take. */
export function communityPoolSpec(server: CommunityServerSpec): PoolSpec {
  return Value.Default(PoolSpec, { name: `community-${server.name}`, runner: 'mcp', ...server.pool, limits: { ...server.pool.limits } }) as PoolSpec;
}
