import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type OpenAiTestServer, reply, startOpenAiTestServer } from '../../test/helpers/openai-test-server.js';
import type { SecretStore } from '../secrets/secret-store.js';
import { createAppLlmProviders } from './app-llm-providers.js';

describe("an app's own model endpoint", () => {
  let llm: OpenAiTestServer;
  let port = '';
  /** The app `alpha`'s section of the secrets: `model-key` with key `token`. */
  let token: string | undefined = 'alpha-key-1';
  const secrets: SecretStore = {
    ofApp: (appId, name, key) => (appId === 'alpha' && name === 'model-key' && key === 'token' && token !== undefined ? { value: token, version: token } : undefined),
    appHas: () => true,
    ofCommunity: () => undefined,
  };
  const spec = (url: string) => ({ endpoint: { url, secret: { name: 'model-key', key: 'token' } }, model: 'small' });

  beforeAll(async () => {
    llm = await startOpenAiTestServer();
    port = new URL(llm.baseUrl).port;
  });
  afterAll(() => llm.close());
  beforeEach(() => {
    llm.reset();
    token = 'alpha-key-1';
  });

  it("sends the app's key as a bearer header, to its app only, and reads a rotated key on the next call", async () => {
    const providers = createAppLlmProviders({ secrets, allowPrivate: [`127.0.0.1:${port}`], maxRetries: 0 });
    providers.update([{ appId: 'alpha', llm: spec(llm.baseUrl) }, { appId: 'beta' }]);
    expect(providers.forApp('beta')).toBeUndefined();
    llm.enqueue(reply.text('one'), reply.text('two'));
    await expect(providers.forApp('alpha')!.generate({ prompt: 'hi', maxTokens: 8 })).resolves.toMatchObject({ text: 'one' });
    token = 'alpha-key-2';
    await providers.forApp('alpha')!.generate({ prompt: 'hi', maxTokens: 8 });
    expect(llm.requests.map((request) => request.headers.authorization)).toEqual(['Bearer alpha-key-1', 'Bearer alpha-key-2']);
    providers.update([]);
    expect(providers.forApp('alpha')).toBeUndefined();
  });

  it('follows no redirect, so the key never goes to where a redirect points', async () => {
    const elsewhere = await startOpenAiTestServer();
    try {
      const providers = createAppLlmProviders({ secrets, allowPrivate: [`127.0.0.1:${port}`, `127.0.0.1:${new URL(elsewhere.baseUrl).port}`], maxRetries: 0 });
      providers.update([{ appId: 'alpha', llm: spec(llm.baseUrl) }]);
      llm.enqueue(reply.raw('', { status: 307, headers: { location: `${elsewhere.baseUrl}/chat/completions` } }));
      await expect(providers.forApp('alpha')!.generate({ prompt: 'hi', maxTokens: 8 })).rejects.toMatchObject({ code: 'UHLP_LLM_REQUEST_REJECTED' });
      expect(elsewhere.requests).toHaveLength(0);
    } finally {
      await elsewhere.close();
    }
  });

  it('fails UHLP_SECRET_UNAVAILABLE, sending nothing, when the secret is gone', async () => {
    const providers = createAppLlmProviders({ secrets, allowPrivate: [`127.0.0.1:${port}`], maxRetries: 0 });
    providers.update([{ appId: 'alpha', llm: spec(llm.baseUrl) }]);
    token = undefined;
    await expect(providers.forApp('alpha')!.generate({ prompt: 'hi', maxTokens: 8 })).rejects.toMatchObject({ code: 'UHLP_SECRET_UNAVAILABLE' });
    expect(llm.requests).toHaveLength(0);
  });

  it.each([
    ['loopback the operator did not allow', (base: string) => base, []],
    ['a name resolving to loopback', (base: string) => base.replace('127.0.0.1', 'models.rebound.test'), []],
    ['the metadata address, through an allowed name', (base: string) => base.replace('127.0.0.1', 'metadata.test'), ['metadata.test:PORT']],
  ] as Array<[string, (base: string) => string, string[]]>)('refuses %s at connect time, sending nothing', async (_label, url, allowed) => {
    const lookup = async (host: string) =>
      host === 'metadata.test' ? [{ address: '169.254.169.254', family: 4 }] : host === 'models.rebound.test' ? [{ address: '127.0.0.1', family: 4 }] : [];
    // A metadata address is reachable only when listed itself, never through an allowed name.
    const allowPrivate = allowed.map((entry) => entry.replace('PORT', port));
    const providers = createAppLlmProviders({ secrets, allowPrivate, maxRetries: 0, lookup });
    providers.update([{ appId: 'alpha', llm: spec(url(llm.baseUrl)) }]);
    await expect(providers.forApp('alpha')!.generate({ prompt: 'hi', maxTokens: 8 })).rejects.toMatchObject({ code: 'UHLP_LLM_ENDPOINT_NOT_ALLOWED' });
    expect(llm.requests).toHaveLength(0);
  });
});
