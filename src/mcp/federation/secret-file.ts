/**
 * The values behind remote MCP servers' secretRefs on a core without a
 * cluster: one YAML (or JSON) file of the core's configuration,
 * `{<secret>: {<key>: value}}`, the shape of a Kubernetes Secret's data, read
 * once at start. An app's files never hold these.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { UhlpError } from '../../shared/errors.js';

export type SecretLookup = (appId: string, name: string, key: string) => string | undefined;

export function secretFile(file: string | undefined): SecretLookup {
  if (file === undefined) return () => undefined;
  const parsed = parse(readFileSync(file, 'utf8')) as unknown;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UhlpError('UHLP_CONFIG_INVALID', `${file} must map secret names to {key: value} maps`, { file });
  }
  const secrets = new Map<string, ReadonlyMap<string, string>>();
  for (const [name, data] of Object.entries(parsed as Record<string, unknown>)) {
    if (typeof data !== 'object' || data === null) continue;
    secrets.set(name, new Map(Object.entries(data as Record<string, unknown>).filter((entry): entry is [string, string] => typeof entry[1] === 'string')));
  }
  return (_appId, name, key) => secrets.get(name)?.get(key);
}
