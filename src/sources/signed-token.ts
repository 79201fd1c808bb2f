/**
 * Tokens the core signs with its sources key (HMAC-SHA256): callback URLs,
 * queue publish tokens and the operator's token for the queue admin endpoints.
 * A token is `v1.<claims>.<mac>` (base64url), its claims bound to a purpose, an
 * app, a name and an expiry, so a token made for one use opens nothing else.
 * The key comes from the configuration (UHLP_SOURCES_KEY_FILE / UHLP_SOURCES_KEY)
 * or is generated once and kept in the data directory (`sources.key`, mode 0600);
 * whoever can read it can mint tokens, like the core.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { UhlpError } from '../shared/errors.js';

/** What a token is for. */
export type TokenPurpose = 'callback' | 'queue-publish' | 'queue-admin';

export interface TokenClaims {
  readonly purpose: TokenPurpose;
  /** The app; `*` in an admin token (every app). */
  readonly app: string;
  /** The callback or queue name; `*` for every queue of the app. */
  readonly name: string;
  /** Epoch seconds after which the token is refused; 0 for never. */
  readonly expiresAt: number;
  /** A callback's correlation. */
  readonly correlation?: string;
  /** A random id: a callback token is used once under it. */
  readonly id?: string;
}

/** The file a generated key is kept in, under the data directory. */
export const SOURCES_KEY_FILE = 'sources.key';
/** The longest token read: anything longer is refused before any work. */
const MAX_TOKEN_LENGTH = 4096;
const KEY_BYTES = 32;

/** The configured key, or the one in `<dataDir>/sources.key` (made on first use). */
export async function loadSourcesKey(dataDir: string, configured: Buffer | undefined): Promise<Buffer> {
  if (configured !== undefined) return configured;
  const file = path.join(dataDir, SOURCES_KEY_FILE);
  try {
    const text = (await readFile(file, 'utf8')).trim();
    const key = Buffer.from(text, 'base64url');
    if (key.length >= KEY_BYTES) return key;
    throw new UhlpError('UHLP_CONFIG_INVALID', `${file} must hold a base64url key of at least ${KEY_BYTES} bytes`, { field: 'sourcesKey' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const key = randomBytes(KEY_BYTES);
  // `wx`: two cores starting on one data directory must not each write their own key.
  try {
    await writeFile(file, `${key.toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
    await chmod(file, 0o600);
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return loadSourcesKey(dataDir, undefined);
    throw error;
  }
}

export function signToken(key: Buffer, claims: TokenClaims): string {
  const body = Buffer.from(
    JSON.stringify({ p: claims.purpose, a: claims.app, n: claims.name, x: claims.expiresAt, ...(claims.correlation !== undefined ? { c: claims.correlation } : {}), ...(claims.id !== undefined ? { i: claims.id } : {}) }),
  ).toString('base64url');
  return `v1.${body}.${mac(key, body)}`;
}

/** Why a token was refused: forged or malformed, or expired. */
export type TokenRefusal = 'invalid' | 'expired';

/** The claims of a genuine, unexpired token of `purpose`; otherwise why not. */
export function verifyToken(key: Buffer, token: string, purpose: TokenPurpose, nowMs: number = Date.now()): TokenClaims | TokenRefusal {
  if (token.length > MAX_TOKEN_LENGTH) return 'invalid';
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== 'v1') return 'invalid';
  const [, body, signature] = parts as [string, string, string];
  const expected = Buffer.from(mac(key, body), 'base64url');
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return 'invalid';
  }
  if (raw['p'] !== purpose || typeof raw['a'] !== 'string' || typeof raw['n'] !== 'string' || typeof raw['x'] !== 'number') return 'invalid';
  if (raw['x'] !== 0 && raw['x'] * 1000 <= nowMs) return 'expired';
  return {
    purpose,
    app: raw['a'],
    name: raw['n'],
    expiresAt: raw['x'],
    ...(typeof raw['c'] === 'string' ? { correlation: raw['c'] } : {}),
    ...(typeof raw['i'] === 'string' ? { id: raw['i'] } : {}),
  };
}

function mac(key: Buffer, body: string): string {
  return createHmac('sha256', key).update(`v1.${body}`).digest('base64url');
}

/** A bearer token from an Authorization header; undefined when there is none. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer\s+(\S+)$/i.exec(header.trim());
  return match?.[1];
}
