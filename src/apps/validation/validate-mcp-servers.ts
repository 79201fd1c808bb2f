/**
 * The rules of spec.mcpServers that the schema cannot state: each server is
 * either stdio or http; a stdio server is a package or a script of the app, in
 * a pool of its own with runner: mcp (one server process per sandbox, and no
 * component runs there); names are unique; an http server's headers name
 * secrets of the app's own.
 */
import path from 'node:path';
import type { AppSpec } from '../schema/app-definition-schema.js';

/** Whether the app's own secrets hold `name` (and, with `key`, that key of it). */
export type AppSecretCheck = (name: string, key?: string) => boolean;

/**
 * The problems of spec.mcpServers. `hasSecret` is the app's own secrets: a
 * secretRef naming any other (another app's, the operator's, or none at all)
 * is a problem of that field. Without it secretRefs are not checked (a reader
 * that holds no secrets, such as the operator).
 */
export function mcpServerProblems(spec: AppSpec, fileExists: (appRelativePath: string) => boolean, hasSecret?: AppSecretCheck): Array<[string, string]> {
  const problems: Array<[string, string]> = [];
  const names = new Set<string>();
  const poolsTaken = new Map<string, string>();
  const componentPools = new Set(spec.components.map((component) => component.pool));
  spec.mcpServers?.forEach((server, i) => {
    const at = `/spec/mcpServers/${i}`;
    if (names.has(server.name)) problems.push([`${at}/name`, `duplicate MCP server name "${server.name}"`]);
    names.add(server.name);
    if ((server.stdio === undefined) === (server.http === undefined)) {
      problems.push([at, 'declare exactly one of stdio and http']);
      return;
    }
    server.http?.headers.forEach((header, j) => {
      if (hasSecret === undefined) return;
      const ref = `${at}/http/headers/${j}/secretRef`;
      if (!hasSecret(header.secretRef.name)) problems.push([`${ref}/name`, `the app has no secret "${header.secretRef.name}": a header names one of the app's own secrets (a Secret of its namespace in a cluster, its section of the core's MCP secrets file otherwise)`]);
      else if (!hasSecret(header.secretRef.name, header.secretRef.key)) problems.push([`${ref}/key`, `the app's secret "${header.secretRef.name}" has no key "${header.secretRef.key}"`]);
    });
    const stdio = server.stdio;
    if (stdio === undefined) return;
    if ((stdio.package === undefined) === (stdio.script === undefined)) problems.push([`${at}/stdio`, 'name exactly one of package and script']);
    if (stdio.script !== undefined) {
      const normalized = path.posix.normalize(stdio.script);
      if (path.posix.isAbsolute(stdio.script) || normalized.startsWith('../') || normalized === '..') problems.push([`${at}/stdio/script`, `"${stdio.script}" leaves the app directory`]);
      else if (!/\.m?js$/.test(stdio.script)) problems.push([`${at}/stdio/script`, `"${stdio.script}" must be a .js or .mjs module`]);
      else if (!fileExists(normalized)) problems.push([`${at}/stdio/script`, `"${stdio.script}" does not exist in the app directory`]);
    }
    const pool = spec.pools.find((candidate) => candidate.name === stdio.pool);
    if (pool === undefined) problems.push([`${at}/stdio/pool`, `pool "${stdio.pool}" is not declared in spec.pools`]);
    else if (pool.runner !== 'mcp') problems.push([`${at}/stdio/pool`, `a stdio MCP server runs in a pool with runner: mcp; pool "${pool.name}" has runner: ${pool.runner}`]);
    else if (poolsTaken.has(pool.name)) problems.push([`${at}/stdio/pool`, `pool "${pool.name}" already runs MCP server "${poolsTaken.get(pool.name)}": one server per pool`]);
    else if (componentPools.has(pool.name)) problems.push([`${at}/stdio/pool`, `pool "${pool.name}" runs components too; an MCP server's pool runs nothing else`]);
    if (pool !== undefined) poolsTaken.set(pool.name, server.name);
  });
  spec.pools.forEach((pool, i) => {
    if (pool.runner === 'mcp' && !poolsTaken.has(pool.name)) problems.push([`/spec/pools/${i}/runner`, `pool "${pool.name}" has runner: mcp but no stdio server of spec.mcpServers runs in it`]);
  });
  return problems;
}

/** Whether a tool name of spec.tools names a federated tool of a server the app can reach. */
export function isFederatedToolName(spec: AppSpec, name: string): boolean {
  if (name.startsWith('community.')) return /^community\.[a-z0-9-]+\.[A-Za-z0-9_.-]+$/.test(name);
  const match = /^app\.([a-z0-9-]+)\.[A-Za-z0-9_.-]+$/.exec(name);
  return match !== null && (spec.mcpServers ?? []).some((server) => server.name === match[1]);
}
