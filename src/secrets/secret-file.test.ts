import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseSecrets } from './secret-file.js';
import { watchSecretFile } from './watched-secret-file.js';

describe('the secrets file', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-secrets-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("gives each app its own secrets and no other app's, and the community servers theirs", () => {
    const file = path.join(dir, 'secrets.yaml');
    writeFileSync(file, 'apps:\n  shop:\n    search: { token: shop-token }\n  blog:\n    search: { token: blog-token }\ncommunity:\n  web: { key: web-key }\n');
    const secrets = watchSecretFile(file);
    try {
      expect(secrets.ofApp('shop', 'search', 'token')?.value).toBe('shop-token');
      expect(secrets.ofApp('blog', 'search', 'token')?.value).toBe('blog-token');
      expect(secrets.ofApp('shop', 'web', 'key')).toBeUndefined();
      expect(secrets.ofApp('other', 'search', 'token')).toBeUndefined();
      expect(secrets.ofCommunity('web', 'key')?.value).toBe('web-key');
      expect(secrets.ofCommunity('search', 'token')).toBeUndefined();
      expect([secrets.appHas('shop', 'search'), secrets.appHas('shop', 'search', 'token'), secrets.appHas('shop', 'search', 'nope'), secrets.appHas('shop', 'web')]).toEqual([true, true, false, false]);
      expect(secrets.values().map((entry) => entry.value).sort()).toEqual(['blog-token', 'shop-token', 'web-key']);
    } finally {
      secrets.close();
    }
  });

  it('moves a secret to its next version when, and only when, its data changes', () => {
    const first = parseSecrets({ apps: { shop: { a: { k: 'one' }, b: { k: 'same' } } } }, 'f.yaml');
    const second = parseSecrets({ apps: { shop: { a: { k: 'two' }, b: { k: 'same' } } } }, 'f.yaml', first);
    expect([first.ofApp('shop', 'a', 'k')?.version, first.ofApp('shop', 'b', 'k')?.version]).toEqual(['1', '1']);
    expect([second.ofApp('shop', 'a', 'k')?.version, second.ofApp('shop', 'b', 'k')?.version]).toEqual(['2', '1']);
  });

  it('is read again when it is replaced, and keeps the values before a file that does not parse, without quoting it', () => {
    const file = path.join(dir, 'rotating.yaml');
    writeFileSync(file, 'apps:\n  shop:\n    api: { token: first-value }\n');
    const warnings: unknown[] = [];
    const logger = { warn: (...args: unknown[]) => warnings.push(args) } as never;
    const secrets = watchSecretFile(file, { intervalMs: 60_000, logger });
    try {
      const inFlight = secrets.ofApp('shop', 'api', 'token');
      // Written beside it and renamed into place, as editors and mounted Secrets do.
      writeFileSync(`${file}.new`, 'apps:\n  shop:\n    api: { token: second-value }\n');
      renameSync(`${file}.new`, file);
      expect(secrets.refresh()).toBe(true);
      expect(secrets.ofApp('shop', 'api', 'token')).toEqual({ value: 'second-value', version: '2' });
      // What a request read before the change stays what it has.
      expect(inFlight).toEqual({ value: 'first-value', version: '1' });
      writeFileSync(file, 'apps:\n  shop:\n    api: { token: "third-value\n');
      expect(secrets.refresh()).toBe(false);
      expect(secrets.ofApp('shop', 'api', 'token')?.value).toBe('second-value');
      expect(JSON.stringify(warnings)).not.toContain('third-value');
      expect(warnings).toHaveLength(1);
    } finally {
      secrets.close();
    }
  });

  it('refuses the flat format of earlier releases, which says no owner, naming what to do', () => {
    expect(() => parseSecrets({ search: { token: 't' } }, 'f.yaml')).toThrow(/UHLP_SECRETS_FILE f\.yaml: it is in the flat format.*apps\.<appId>\.search/);
    try {
      parseSecrets({ search: { token: 't' } }, 'f.yaml');
    } catch (error) {
      expect(error).toMatchObject({ code: 'UHLP_CONFIG_INVALID' });
    }
  });

  it.each([
    ['a list', [], /it is not a map/],
    ['an unknown key', { apps: {}, other: 1 }, /unknown top-level key "other"/],
    ['apps that is not a map', { apps: 'x' }, /apps is not a map/],
    ['a secret that is not a map', { apps: { shop: { search: 'x' } } }, /apps\.shop\.search is not a map/],
    ['a value that is not a string', { community: { web: { key: 1 } } }, /community\.web\.key is not a string/],
  ])('refuses %s', (_label, parsed, message) => {
    expect(() => parseSecrets(parsed, 'f.yaml')).toThrow(message);
  });

  it('has no secrets without a file, or with an empty one', () => {
    expect(watchSecretFile(undefined).appHas('shop', 'search')).toBe(false);
    expect(parseSecrets(null, 'f.yaml').ofCommunity('web', 'key')).toBeUndefined();
  });
});
