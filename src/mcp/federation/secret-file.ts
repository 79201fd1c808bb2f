/**
 * The values behind remote MCP servers' secretRefs: one YAML (or JSON) file of
 * the core's configuration (UHLP_MCP_SECRETS_FILE; in a cluster the chart's
 * `core.mcp.secrets` Secret, mounted), read once at start. Every secret
 * belongs to one owner, so an app's secretRef resolves only within its own
 * section and never reaches another app's secret or the operator's:
 *
 * ```yaml
 * apps:
 *   shop:                    # an app id
 *     search: { token: s3cr3t }
 * community:                 # the operator's community servers
 *   web: { key: k3y }
 * ```
 *
 * Each secret is `{<key>: value}`, the shape of a Kubernetes Secret's data. An
 * app's files never hold these.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { UhlpError } from '../../shared/errors.js';

/** One owner's secrets: a value by secret name and key. */
export type SecretValues = ReadonlyMap<string, ReadonlyMap<string, string>>;

/** The secrets of each owner: the apps' by app id, and the community servers'. */
export interface McpSecrets {
  /** The value of one of an app's own secrets; undefined when the app has no such secret or key. */
  ofApp(appId: string, name: string, key: string): string | undefined;
  /** Whether the app's own secrets hold `name` (and, with `key`, that key of it): checked when the app loads. */
  appHas(appId: string, name: string, key?: string): boolean;
  /** The value of one of the community servers' secrets (the operator's). */
  ofCommunity(name: string, key: string): string | undefined;
}

/** No secrets at all (a core without a secrets file). */
export const NO_SECRETS: McpSecrets = { ofApp: () => undefined, appHas: () => false, ofCommunity: () => undefined };

const FORMAT = '{apps: {<appId>: {<secret>: {<key>: value}}}, community: {<secret>: {<key>: value}}}';

/** The secrets of the file named by UHLP_MCP_SECRETS_FILE; none without one. */
export function secretFile(file: string | undefined): McpSecrets {
  if (file === undefined) return NO_SECRETS;
  return parseSecrets(parse(readFileSync(file, 'utf8')) as unknown, file);
}

/**
 * The secrets of a parsed secrets file. The flat format of earlier releases
 * (`{<secret>: {<key>: value}}`, every secret open to every app) is refused,
 * not guessed at: it does not say whose a secret is, and reading it as anyone's
 * would hand it to apps it was never meant for.
 */
export function parseSecrets(parsed: unknown, file: string): McpSecrets {
  const invalid = (why: string): UhlpError => new UhlpError('UHLP_CONFIG_INVALID', `UHLP_MCP_SECRETS_FILE ${file}: ${why}; the file is ${FORMAT}`, { file });
  if (parsed === null || parsed === undefined) return NO_SECRETS;
  if (!isRecord(parsed)) throw invalid('it is not a map');
  const unknown = Object.keys(parsed).filter((name) => name !== 'apps' && name !== 'community');
  if (unknown.length > 0) {
    const flat = Object.values(parsed).every((value) => isRecord(value) && Object.values(value).every((entry) => typeof entry === 'string'));
    throw invalid(
      flat
        ? `it is in the flat format of earlier releases ({<secret>: {<key>: value}}), which does not say which app a secret belongs to; put each secret under its app (apps.<appId>.${unknown[0]}) or under community`
        : `unknown top-level key "${unknown[0]}"`,
    );
  }
  const apps = new Map<string, SecretValues>();
  const appsSection = parsed['apps'] ?? {};
  if (!isRecord(appsSection)) throw invalid('apps is not a map of app ids');
  for (const [appId, secrets] of Object.entries(appsSection)) apps.set(appId, secretValues(secrets, `apps.${appId}`, invalid));
  const community = secretValues(parsed['community'] ?? {}, 'community', invalid);
  return {
    ofApp: (appId, name, key) => apps.get(appId)?.get(name)?.get(key),
    appHas: (appId, name, key) => {
      const secret = apps.get(appId)?.get(name);
      return secret !== undefined && (key === undefined || secret.has(key));
    },
    ofCommunity: (name, key) => community.get(name)?.get(key),
  };
}

function secretValues(raw: unknown, at: string, invalid: (why: string) => UhlpError): SecretValues {
  if (!isRecord(raw)) throw invalid(`${at} is not a map of secret names`);
  const secrets = new Map<string, ReadonlyMap<string, string>>();
  for (const [name, data] of Object.entries(raw)) {
    if (!isRecord(data)) throw invalid(`${at}.${name} is not a map of keys to values`);
    const values = new Map<string, string>();
    for (const [key, value] of Object.entries(data)) {
      if (typeof value !== 'string') throw invalid(`${at}.${name}.${key} is not a string`);
      values.set(key, value);
    }
    secrets.set(name, values);
  }
  return secrets;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
