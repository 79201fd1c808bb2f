import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseSecrets, secretFile } from './secret-file.js';

describe('the MCP secrets file', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-mcp-secrets-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("gives each app its own secrets and no other app's, and the community servers theirs", () => {
    const file = path.join(dir, 'secrets.yaml');
    writeFileSync(file, 'apps:\n  shop:\n    search: { token: shop-token }\n  blog:\n    search: { token: blog-token }\ncommunity:\n  web: { key: web-key }\n');
    const secrets = secretFile(file);
    expect(secrets.ofApp('shop', 'search', 'token')).toBe('shop-token');
    expect(secrets.ofApp('blog', 'search', 'token')).toBe('blog-token');
    expect(secrets.ofApp('shop', 'web', 'key')).toBeUndefined();
    expect(secrets.ofApp('other', 'search', 'token')).toBeUndefined();
    expect(secrets.ofCommunity('web', 'key')).toBe('web-key');
    expect(secrets.ofCommunity('search', 'token')).toBeUndefined();
    expect([secrets.appHas('shop', 'search'), secrets.appHas('shop', 'search', 'token'), secrets.appHas('shop', 'search', 'nope'), secrets.appHas('shop', 'web')]).toEqual([true, true, false, false]);
  });

  it('refuses the flat format of earlier releases, which says no owner, naming what to do', () => {
    expect(() => parseSecrets({ search: { token: 't' } }, 'f.yaml')).toThrow(/UHLP_MCP_SECRETS_FILE f\.yaml: it is in the flat format.*apps\.<appId>\.search/);
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
    expect(secretFile(undefined).appHas('shop', 'search')).toBe(false);
    expect(parseSecrets(null, 'f.yaml').ofCommunity('web', 'key')).toBeUndefined();
  });
});
