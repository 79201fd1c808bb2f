import { describe, expect, it } from 'vitest';
import type { WebInjection } from '../apps/schema/app-definition-schema.js';
import { parseSecrets } from './secret-file.js';
import { resolveWebCredentials } from './web-credentials.js';

const store = parseSecrets({ apps: { shop: { api: { token: 't0ken-value', pair: 'user:pass' } }, blog: { api: { token: 'blog-token' } } } }, 'f.yaml');
const rule = (extra: Partial<WebInjection> = {}): WebInjection => ({ url: 'https://api.example.com/v1/', header: 'Authorization', secretRef: { name: 'api', key: 'token' }, ...extra });
const target = { url: new URL('https://api.example.com/v1/x'), method: 'GET' };

describe("an app's web credentials for one fetch", () => {
  it.each<[string, Partial<WebInjection>, string]>([
    ['bearer', { scheme: 'bearer' }, 'Bearer t0ken-value'],
    ['basic, from user:password', { scheme: 'basic', secretRef: { name: 'api', key: 'pair' } }, `Basic ${Buffer.from('user:pass').toString('base64')}`],
    ['a prefix', { prefix: 'Token ' }, 'Token t0ken-value'],
    ['the value alone', {}, 't0ken-value'],
  ])('formats %s', (_label, extra, value) => {
    const { credentials, uses } = resolveWebCredentials('shop', [rule(extra)], store, target);
    expect(credentials).toEqual([{ origin: 'https://api.example.com', pathPrefix: '/v1/', header: 'Authorization', value }]);
    expect(uses).toEqual([{ name: 'api', key: extra.secretRef?.key ?? 'token', version: '1' }]);
  });

  it("reads the app's own section only", () => {
    expect(resolveWebCredentials('blog', [rule({ scheme: 'bearer' })], store, target).credentials[0]?.value).toBe('Bearer blog-token');
  });

  it('fails a fetch a rule matches when the secret is gone, and leaves out rules that do not match it', () => {
    expect(() => resolveWebCredentials('other', [rule()], store, target)).toThrow(expect.objectContaining({ code: 'UHLP_SECRET_UNAVAILABLE' }));
    expect(resolveWebCredentials('other', [rule()], store, { url: new URL('https://elsewhere.example/'), method: 'GET' })).toEqual({ credentials: [], uses: [] });
  });
});
