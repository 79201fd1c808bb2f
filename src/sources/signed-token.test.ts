import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { bearerToken, loadSourcesKey, signToken, verifyToken, type TokenClaims } from './signed-token.js';

const key = Buffer.alloc(32, 7);
const claims: TokenClaims = { purpose: 'callback', app: 'shop', name: 'paid', correlation: 'order-1', expiresAt: 2_000_000_000, id: 'abc' };

describe('signed tokens', () => {
  it('verifies a token it signed and gives its claims back', () => {
    expect(verifyToken(key, signToken(key, claims), 'callback', 1_000_000_000_000)).toEqual(claims);
  });

  it('refuses another key, another purpose, changed claims, and garbage', () => {
    const token = signToken(key, claims);
    const [version, body, mac] = token.split('.') as [string, string, string];
    const changed = Buffer.from(Buffer.from(body, 'base64url').toString().replace('order-1', 'order-2')).toString('base64url');
    expect(verifyToken(Buffer.alloc(32, 8), token, 'callback')).toBe('invalid');
    expect(verifyToken(key, token, 'queue-publish')).toBe('invalid');
    expect(verifyToken(key, `${version}.${changed}.${mac}`, 'callback')).toBe('invalid');
    for (const bad of ['', 'v1', 'v1..', 'v2.a.b', `${token}.x`, 'x'.repeat(10_000), `v1.${Buffer.from('{"p":"callback"}').toString('base64url')}.${mac}`]) {
      expect(verifyToken(key, bad, 'callback')).toBe('invalid');
    }
  });

  it('tells an expired token from a forged one; 0 never expires', () => {
    expect(verifyToken(key, signToken(key, claims), 'callback', 2_000_000_000_000)).toBe('expired');
    expect(verifyToken(key, signToken(key, { ...claims, expiresAt: 0 }), 'callback', 9_000_000_000_000)).toMatchObject({ app: 'shop' });
  });

  it('reads bearer tokens from Authorization', () => {
    expect(bearerToken('Bearer abc.def')).toBe('abc.def');
    expect(bearerToken('bearer  abc')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });

  it('generates a key once into the data directory, readable by its owner only, and reads it back', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-key-'));
    const [first, second] = await Promise.all([loadSourcesKey(dir, undefined), loadSourcesKey(dir, undefined)]);
    expect(first.equals(second)).toBe(true);
    expect(await loadSourcesKey(dir, undefined)).toEqual(first);
    expect(statSync(path.join(dir, 'sources.key')).mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(dir, 'sources.key'), 'utf8').trim()).toBe(first.toString('base64url'));
    expect(await loadSourcesKey(dir, key)).toBe(key);
  });
});
