/**
 * The state URL's three forms, parsed once (config.ts checks it at start):
 *
 *   redis://[user:password@]host:port[/db]      one node (rediss:// with TLS)
 *   redis+sentinel://[user:password@]host1:26379,host2:26379/<masterName>[/<db>][?sentinelUsername=…&sentinelPassword=…]
 *                                               (rediss+sentinel:// with TLS to the sentinels and to the master)
 *   redis+cluster://[user:password@]host1:6379,host2:6379[/][?servername=…]   a Redis Cluster (rediss+cluster:// with TLS)
 *
 * With TLS (rediss+sentinel://, rediss+cluster://), `servername` is the name
 * checked on every certificate when it is not the host dialled, and `caFile` a
 * PEM file of the CAs those certificates are checked against instead of the
 * system's (a private CA, e.g. from a Kubernetes Secret; config.ts checks it
 * exists). Both are refused without TLS.
 *
 * With Sentinel, the client asks the sentinels for the current master of
 * `<masterName>`, connects to it (checking its role), and asks again after a
 * disconnect, so it follows a failover. The credentials before `@` are the
 * master's (and replicas'); the sentinels' own are query parameters. Both are
 * percent-decoded. A port left out is 26379.
 *
 * With Cluster, the hosts are seeds: the client asks them for the slot map
 * (CLUSTER SLOTS) and then talks to every master, following MOVED and ASK.
 * Cluster has one database, so no `/<db>`; a port left out is 6379.
 *
 * redis-connection.ts makes the clients from it.
 */
import { UhlpError } from '../shared/errors.js';

export interface SentinelAddress {
  readonly host: string;
  readonly port: number;
}

export type RedisTarget =
  | { readonly kind: 'node'; readonly url: string }
  | {
      readonly kind: 'sentinel';
      readonly sentinels: readonly SentinelAddress[];
      readonly masterName: string;
      readonly db: number;
      readonly username?: string;
      readonly password?: string;
      readonly sentinelUsername?: string;
      readonly sentinelPassword?: string;
      /** TLS to the sentinels and to the master and replicas they name (`rediss+sentinel://`). */
      readonly tls: boolean;
      /** The TLS server name checked on every certificate, when not the address dialled. */
      readonly servername?: string;
      /** PEM file of the CAs the certificates are checked against, instead of the system's. */
      readonly caFile?: string;
    }
  | {
      readonly kind: 'cluster';
      readonly nodes: readonly SentinelAddress[];
      readonly tls: boolean;
      /** The TLS server name checked on every node's certificate, when not the address dialled. */
      readonly servername?: string;
      /** PEM file of the CAs the certificates are checked against, instead of the system's. */
      readonly caFile?: string;
      readonly username?: string;
      readonly password?: string;
    };

const NODE_URL = /^rediss?:\/\/./;
const SENTINEL_URL = /^rediss?\+sentinel:\/\/(?:([^@/?#]*)@)?([^/?#]+)\/([^/?#]+)(?:\/([^/?#]*))?\/?(?:\?([^#]*))?$/;
const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const IPV6 = /^[0-9A-Fa-f:.]+$/;
const CLUSTER_URL = /^(rediss?)\+cluster:\/\/(?:([^@/?#]*)@)?([^/?#]+)\/?(?:\?([^#]*))?$/;
const QUERY_KEYS = new Set(['sentinelUsername', 'sentinelPassword', 'servername', 'caFile']);
const CLUSTER_QUERY_KEYS = new Set(['servername', 'caFile']);
/** The URL schemes of a Sentinel target. */
const SENTINEL_SCHEMES = /^rediss?\+sentinel:\/\//;
/** Sentinel's own default port. */
const SENTINEL_PORT = 26379;
/** A Redis node's default port. */
const NODE_PORT = 6379;
/** The URL schemes of a Redis Cluster. */
const CLUSTER_SCHEMES = /^rediss?\+cluster:\/\//;

/** Whether `raw` has the form of a Redis state URL (node or Sentinel); parseRedisUrl says what is wrong. */
export function isRedisUrl(raw: string): boolean {
  return NODE_URL.test(raw) || SENTINEL_SCHEMES.test(raw) || CLUSTER_SCHEMES.test(raw);
}

/**
 * Parses a state URL; throws UHLP_CONFIG_INVALID naming `setting` and what is
 * wrong. The message never repeats a password.
 */
export function parseRedisUrl(raw: string, setting = 'state'): RedisTarget {
  if (NODE_URL.test(raw)) return { kind: 'node', url: raw };
  if (CLUSTER_SCHEMES.test(raw)) return parseClusterUrl(raw, setting);
  if (!SENTINEL_SCHEMES.test(raw)) fail(setting, 'must be a redis://, rediss://, redis+sentinel:// or redis+cluster:// URL', raw);
  const match = SENTINEL_URL.exec(raw);
  if (!match) fail(setting, 'must be redis+sentinel://[user:password@]host:port[,host:port…]/<masterName>[/<db>][?sentinelPassword=…] (rediss+sentinel:// with TLS)', raw);
  const [, auth, hostList, rawName, rawDb, query] = match;
  const sentinels = hostList!.split(',').map((entry) => sentinelAddress(entry, setting, raw));
  const masterName = decode(rawName!, setting, raw, 'the master name');
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(masterName)) fail(setting, `has a master name that is not 1-128 of A-Z a-z 0-9 . _ -`, raw);
  let db = 0;
  if (rawDb !== undefined && rawDb !== '') {
    if (!/^\d{1,5}$/.test(rawDb) || Number(rawDb) > 65_535) fail(setting, 'has a database number that is not an integer 0-65535', raw);
    db = Number(rawDb);
  }
  const tls = raw.startsWith('rediss+');
  const parameters = queryParameters(query, QUERY_KEYS, setting, raw);
  checkTlsParameters(parameters, tls, 'rediss+sentinel://', setting, raw);
  const target: { -readonly [K in keyof Extract<RedisTarget, { kind: 'sentinel' }>]: Extract<RedisTarget, { kind: 'sentinel' }>[K] } = { kind: 'sentinel', sentinels, masterName, db, tls };
  Object.assign(target, credentials(auth, setting, raw), parameters);
  return target;
}

/** `redis+cluster://` or `rediss+cluster://`: seed nodes, credentials, and the TLS server name. */
function parseClusterUrl(raw: string, setting: string): RedisTarget {
  const match = CLUSTER_URL.exec(raw);
  if (!match) fail(setting, 'must be redis+cluster://[user:password@]host:port[,host:port…][?servername=…] (a Redis Cluster has no database number)', raw);
  const [, scheme, auth, hostList, query] = match;
  const nodes = hostList!.split(',').map((entry) => sentinelAddress(entry, setting, raw, 'cluster node', NODE_PORT));
  const parameters = queryParameters(query, CLUSTER_QUERY_KEYS, setting, raw);
  checkTlsParameters(parameters, scheme === 'rediss', 'rediss+cluster://', setting, raw);
  return { kind: 'cluster', nodes, tls: scheme === 'rediss', ...parameters, ...credentials(auth, setting, raw) };
}

/** `servername` and `caFile` only with TLS; a servername is a host name, a CA file an absolute path. */
function checkTlsParameters(parameters: Record<string, string>, tls: boolean, tlsScheme: string, setting: string, raw: string): void {
  for (const key of ['servername', 'caFile']) if (parameters[key] !== undefined && !tls) fail(setting, `has ${key} without TLS (use ${tlsScheme})`, raw);
  if (parameters.servername !== undefined && !HOST_NAME.test(parameters.servername)) fail(setting, 'has a servername that is not a host name', raw);
  if (parameters.caFile !== undefined && !parameters.caFile.startsWith('/')) fail(setting, 'has a caFile that is not an absolute path', raw);
}

function credentials(auth: string | undefined, setting: string, raw: string): { username?: string; password?: string } {
  if (auth === undefined) return {};
  const colon = auth.indexOf(':');
  const user = colon < 0 ? auth : auth.slice(0, colon);
  if (colon < 0) fail(setting, 'has credentials without a password (user:password@ or :password@)', raw);
  return { ...(user !== '' ? { username: decode(user, setting, raw, 'the user name') } : {}), password: decode(auth.slice(colon + 1), setting, raw, 'the password') };
}

function queryParameters(query: string | undefined, known: ReadonlySet<string>, setting: string, raw: string): Record<string, string> {
  const found: Record<string, string> = {};
  if (query === undefined || query === '') return found;
  for (const pair of query.split('&')) {
    const equals = pair.indexOf('=');
    const key = equals < 0 ? pair : pair.slice(0, equals);
    if (!known.has(key)) fail(setting, `has an unknown parameter "${key.slice(0, 40)}" (known: ${[...known].join(', ')})`, raw);
    if (equals < 0) fail(setting, `has ${key} without a value`, raw);
    if (found[key] !== undefined) fail(setting, `has ${key} twice`, raw);
    found[key] = decode(pair.slice(equals + 1), setting, raw, key);
  }
  return found;
}

function sentinelAddress(entry: string, setting: string, raw: string, what = 'sentinel', defaultPort = SENTINEL_PORT): SentinelAddress {
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry);
  const plain = /^([^:[\]]+)(?::(\d{1,5}))?$/.exec(entry);
  const parts = bracketed ?? plain;
  if (!parts) fail(setting, `has a ${what} address that is not host[:port]: "${entry.slice(0, 80)}"`, raw);
  const host = parts[1]!;
  if (bracketed ? !IPV6.test(host) : !HOST_NAME.test(host)) fail(setting, `has a ${what} host that is not a host name or IP address: "${host.slice(0, 80)}"`, raw);
  const port = parts[2] === undefined ? defaultPort : Number(parts[2]);
  if (port < 1 || port > 65_535) fail(setting, `has a ${what} port outside 1-65535: "${entry.slice(0, 80)}"`, raw);
  return { host, port };
}

function decode(value: string, setting: string, raw: string, what: string): string {
  try {
    const decoded = decodeURIComponent(value);
    // eslint-disable-next-line no-control-regex
    if (/[\0-\x1f\x7f]/.test(decoded)) fail(setting, `has a control character in ${what}`, raw);
    return decoded;
  } catch (error) {
    if (error instanceof UhlpError) throw error;
    return fail(setting, `has a malformed percent-encoding in ${what}`, raw);
  }
}

function fail(setting: string, problem: string, raw: string): never {
  const shown = redactUrl(raw);
  throw new UhlpError('UHLP_CONFIG_INVALID', `${setting} ${problem}, got "${shown}"`, { name: setting, value: shown });
}

/** The URL with the password(s) replaced by `***`, for messages and logs. */
export function redactUrl(raw: string): string {
  return raw
    .slice(0, 300)
    .replace(/^([a-z+]+:\/\/[^:@/?#]*:)[^@/?#]*@/i, '$1***@')
    .replace(/([?&]sentinelPassword=)[^&#]*/g, '$1***');
}
