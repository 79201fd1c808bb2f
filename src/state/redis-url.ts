/**
 * The state URL's two forms, parsed once (config.ts checks it at start):
 *
 *   redis://[user:password@]host:port[/db]      one node (rediss:// with TLS)
 *   redis+sentinel://[user:password@]host1:26379,host2:26379/<masterName>[/<db>][?sentinelUsername=…&sentinelPassword=…]
 *
 * With Sentinel, the client asks the sentinels for the current master of
 * `<masterName>`, connects to it (checking its role), and asks again after a
 * disconnect, so it follows a failover. The credentials before `@` are the
 * master's (and replicas'); the sentinels' own are query parameters. Both are
 * percent-decoded. A port left out is 26379.
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
    };

const NODE_URL = /^rediss?:\/\/./;
const SENTINEL_URL = /^redis\+sentinel:\/\/(?:([^@/?#]*)@)?([^/?#]+)\/([^/?#]+)(?:\/([^/?#]*))?\/?(?:\?([^#]*))?$/;
const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const IPV6 = /^[0-9A-Fa-f:.]+$/;
const QUERY_KEYS = new Set(['sentinelUsername', 'sentinelPassword']);
/** Sentinel's own default port. */
const SENTINEL_PORT = 26379;

/** Whether `raw` has the form of a Redis state URL (node or Sentinel); parseRedisUrl says what is wrong. */
export function isRedisUrl(raw: string): boolean {
  return NODE_URL.test(raw) || raw.startsWith('redis+sentinel://');
}

/**
 * Parses a state URL; throws UHLP_CONFIG_INVALID naming `setting` and what is
 * wrong. The message never repeats a password.
 */
export function parseRedisUrl(raw: string, setting = 'state'): RedisTarget {
  if (NODE_URL.test(raw)) return { kind: 'node', url: raw };
  if (!raw.startsWith('redis+sentinel://')) fail(setting, 'must be a redis://, rediss:// or redis+sentinel:// URL', raw);
  const match = SENTINEL_URL.exec(raw);
  if (!match) fail(setting, 'must be redis+sentinel://[user:password@]host:port[,host:port…]/<masterName>[/<db>][?sentinelPassword=…]', raw);
  const [, auth, hostList, rawName, rawDb, query] = match;
  const sentinels = hostList!.split(',').map((entry) => sentinelAddress(entry, setting, raw));
  const masterName = decode(rawName!, setting, raw, 'the master name');
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(masterName)) fail(setting, `has a master name that is not 1-128 of A-Z a-z 0-9 . _ -`, raw);
  let db = 0;
  if (rawDb !== undefined && rawDb !== '') {
    if (!/^\d{1,5}$/.test(rawDb) || Number(rawDb) > 65_535) fail(setting, 'has a database number that is not an integer 0-65535', raw);
    db = Number(rawDb);
  }
  const target: { -readonly [K in keyof Extract<RedisTarget, { kind: 'sentinel' }>]: Extract<RedisTarget, { kind: 'sentinel' }>[K] } = { kind: 'sentinel', sentinels, masterName, db };
  if (auth !== undefined) {
    const colon = auth.indexOf(':');
    const user = colon < 0 ? auth : auth.slice(0, colon);
    if (colon < 0) fail(setting, 'has credentials without a password (user:password@ or :password@)', raw);
    if (user !== '') target.username = decode(user, setting, raw, 'the user name');
    target.password = decode(auth.slice(colon + 1), setting, raw, 'the password');
  }
  if (query !== undefined && query !== '') {
    for (const pair of query.split('&')) {
      const equals = pair.indexOf('=');
      const key = equals < 0 ? pair : pair.slice(0, equals);
      if (!QUERY_KEYS.has(key)) fail(setting, `has an unknown parameter "${key.slice(0, 40)}" (known: ${[...QUERY_KEYS].join(', ')})`, raw);
      if (equals < 0) fail(setting, `has ${key} without a value`, raw);
      if (target[key as 'sentinelPassword'] !== undefined) fail(setting, `has ${key} twice`, raw);
      target[key as 'sentinelPassword'] = decode(pair.slice(equals + 1), setting, raw, key);
    }
  }
  return target;
}

function sentinelAddress(entry: string, setting: string, raw: string): SentinelAddress {
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry);
  const plain = /^([^:[\]]+)(?::(\d{1,5}))?$/.exec(entry);
  const parts = bracketed ?? plain;
  if (!parts) fail(setting, `has a sentinel address that is not host[:port]: "${entry.slice(0, 80)}"`, raw);
  const host = parts[1]!;
  if (bracketed ? !IPV6.test(host) : !HOST_NAME.test(host)) fail(setting, `has a sentinel host that is not a host name or IP address: "${host.slice(0, 80)}"`, raw);
  const port = parts[2] === undefined ? SENTINEL_PORT : Number(parts[2]);
  if (port < 1 || port > 65_535) fail(setting, `has a sentinel port outside 1-65535: "${entry.slice(0, 80)}"`, raw);
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
