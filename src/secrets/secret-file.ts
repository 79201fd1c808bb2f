/**
 * The core's secrets file (UHLP_SECRETS_FILE; UHLP_MCP_SECRETS_FILE is its
 * earlier name): one YAML (or JSON) file outside the definitions repository,
 * never in Git. Every secret belongs to one owner, so an app resolves only its
 * own section and never reaches another app's secret or the operator's:
 *
 * ```yaml
 * apps:
 *   shop:                    # an app id
 *     weather: { token: s3cr3t }
 * community:                 # the operator's community MCP servers
 *   web: { key: k3y }
 * ```
 *
 * Each secret is `{<key>: value}`, the shape of a Kubernetes Secret's data.
 */
import { UhlpError } from '../shared/errors.js';
import type { ScrubbedValue, SecretStore, SecretValue } from './secret-store.js';

/** One owner's secrets: a value by secret name and key. */
export type SecretValues = ReadonlyMap<string, ReadonlyMap<string, SecretValue>>;

/** The parsed file: each app's secrets and the community's, with every value it holds (for the scrubber). */
export interface SecretFileContent extends SecretStore {
  readonly apps: ReadonlyMap<string, SecretValues>;
  readonly community: SecretValues;
  /** Every value of the file, named, for the scrubber. */
  values(): ScrubbedValue[];
}

const FORMAT = '{apps: {<appId>: {<secret>: {<key>: value}}}, community: {<secret>: {<key>: value}}}';

/**
 * The secrets of a parsed secrets file. `previous` carries versions over: a
 * secret whose data did not change keeps its version, one that did gets the
 * next. The flat format of earlier releases (`{<secret>: {<key>: value}}`,
 * every secret open to every app) is refused, not guessed at: it does not say
 * whose a secret is, and reading it as anyone's would hand it to apps it was
 * never meant for. No message quotes a value.
 */
export function parseSecrets(parsed: unknown, file: string, previous?: SecretFileContent): SecretFileContent {
  const invalid = (why: string): UhlpError => new UhlpError('UHLP_CONFIG_INVALID', `UHLP_SECRETS_FILE ${file}: ${why}; the file is ${FORMAT}`, { file });
  if (parsed === null || parsed === undefined) return fileContent(new Map(), new Map());
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
  for (const [appId, secrets] of Object.entries(appsSection)) apps.set(appId, secretValues(secrets, `apps.${appId}`, invalid, previous?.apps.get(appId)));
  const community = secretValues(parsed['community'] ?? {}, 'community', invalid, previous?.community);
  return fileContent(apps, community);
}

function fileContent(apps: Map<string, SecretValues>, community: SecretValues): SecretFileContent {
  return {
    apps,
    community,
    ofApp: (appId, name, key) => apps.get(appId)?.get(name)?.get(key),
    appHas: (appId, name, key) => {
      const secret = apps.get(appId)?.get(name);
      return secret !== undefined && (key === undefined || secret.has(key));
    },
    ofCommunity: (name, key) => community.get(name)?.get(key),
    values: () => [...apps.values(), community].flatMap((owner) => [...owner].flatMap(([name, data]) => [...data.values()].map((entry) => ({ name, value: entry.value })))),
  };
}

function secretValues(raw: unknown, at: string, invalid: (why: string) => UhlpError, previous: SecretValues | undefined): SecretValues {
  if (!isRecord(raw)) throw invalid(`${at} is not a map of secret names`);
  const secrets = new Map<string, ReadonlyMap<string, SecretValue>>();
  for (const [name, data] of Object.entries(raw)) {
    if (!isRecord(data)) throw invalid(`${at}.${name} is not a map of keys to values`);
    const before = previous?.get(name);
    const plain = new Map<string, string>();
    for (const [key, value] of Object.entries(data)) {
      if (typeof value !== 'string') throw invalid(`${at}.${name}.${key} is not a string`);
      plain.set(key, value);
    }
    // A secret's version is its generation in this file: the same data keeps it, any change moves it on.
    const same = before !== undefined && before.size === plain.size && [...plain].every(([key, value]) => before.get(key)?.value === value);
    const previousVersion = before === undefined ? 0 : Number(before.values().next().value?.version ?? 0);
    const version = String(same ? previousVersion : previousVersion + 1);
    secrets.set(name, new Map([...plain].map(([key, value]) => [key, { value, version }])));
  }
  return secrets;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
