import { describe, expect, it } from 'vitest';
import type { AppSpec } from '../schema/app-definition-schema.js';
import { secretProblems } from './validate-secrets.js';

// The app's own secrets: `weather` with key `token`. Anything else is another owner's or nobody's.
const own = (name: string, key?: string): boolean => name === 'weather' && (key === undefined || key === 'token');
const rule = (extra: Record<string, unknown> = {}) => ({ url: 'https://api.weather.test/v1/', header: 'Authorization', scheme: 'bearer', secretRef: { name: 'weather', key: 'token' }, ...extra });
const spec = (secrets: string[], inject: unknown[], allowHosts = ['api.weather.test']): AppSpec =>
  ({ secrets: secrets.map((name) => ({ name })), capabilities: { web: { allowHosts, methods: ['GET'], timeoutMs: 1, maxBodyBytes: 1, allowPrivate: [], inject } } }) as unknown as AppSpec;

describe('spec.secrets and web credentials', () => {
  it.each([
    ['a declared secret of its own, injected as a bearer header', spec(['weather'], [rule()]), []],
    ['a query credential', spec(['weather'], [rule({ header: undefined, scheme: undefined, query: 'api_key' })]), []],
    ["another app's secret", spec(['blog-key'], []), ['/spec/secrets/0/name']],
    ['a duplicate', spec(['weather', 'weather'], []), ['/spec/secrets/1/name']],
    ['a credential naming an undeclared secret', spec([], [rule()]), ['/spec/capabilities/web/inject/0/secretRef/name']],
    ['a key the secret lacks', spec(['weather'], [rule({ secretRef: { name: 'weather', key: 'other' } })]), ['/spec/capabilities/web/inject/0/secretRef/key']],
    ['both header and query', spec(['weather'], [rule({ query: 'k' })]), ['/spec/capabilities/web/inject/0']],
    ['neither header nor query', spec(['weather'], [rule({ header: undefined, scheme: undefined })]), ['/spec/capabilities/web/inject/0']],
    ['a scheme on a query', spec(['weather'], [rule({ header: undefined, query: 'k' })]), ['/spec/capabilities/web/inject/0/scheme']],
    ['a scheme and a prefix', spec(['weather'], [rule({ prefix: 'Token ' })]), ['/spec/capabilities/web/inject/0/prefix']],
    ['a host allowHosts does not list', spec(['weather'], [rule({ url: 'https://elsewhere.test/' })]), ['/spec/capabilities/web/inject/0/url']],
  ])('%s', (_label, given, paths) => {
    expect(secretProblems(given, own).map(([at]) => at)).toEqual(paths);
  });

  it.each([
    ['a declared secret to a component of the app', ['weather'], { secret: 'weather', components: ['sign'] }, []],
    ['an undeclared secret', [], { secret: 'weather', components: ['sign'] }, ['/spec/capabilities/secrets/read/0/secret']],
    ['a component the app does not have', ['weather'], { secret: 'weather', components: ['other'] }, ['/spec/capabilities/secrets/read/0/components/0']],
  ])('secrets.read: %s', (_label, secrets, grant, paths) => {
    const given = { ...spec(secrets as string[], []), components: [{ id: 'sign' }], capabilities: { secrets: { read: [grant] } } } as unknown as AppSpec;
    expect(secretProblems(given, own).map(([at]) => at)).toEqual(paths);
  });

  it('checks existence only where the reader holds secrets (the operator holds none)', () => {
    expect(secretProblems(spec(['blog-key'], []), undefined)).toEqual([]);
  });

  const llm = (url: string, secret = { name: 'weather', key: 'token' }) => ({ ...spec(['weather'], []), llm: { endpoint: { url, secret } } }) as unknown as AppSpec;
  it.each([
    ['a public https endpoint', llm('https://models.example.com/v1'), []],
    ['loopback (refused at connect unless the operator allows it)', llm('http://127.0.0.1:8080/v1'), []],
    ['the metadata endpoint', llm('http://169.254.169.254/latest'), ['/spec/llm/endpoint/url']],
    ['an IPv6 link-local address', llm('http://[fe80::1]/v1'), ['/spec/llm/endpoint/url']],
    ['a file URL', llm('file:///etc/passwd'), ['/spec/llm/endpoint/url']],
    ['credentials in the URL', llm('https://user:pw@models.example.com/v1'), ['/spec/llm/endpoint/url']],
    ['a query in the URL', llm('https://models.example.com/v1?key=x'), ['/spec/llm/endpoint/url']],
    ['an undeclared secret', llm('https://models.example.com/v1', { name: 'other', key: 'token' }), ['/spec/llm/endpoint/secret/name']],
    ['a key the secret lacks', llm('https://models.example.com/v1', { name: 'weather', key: 'nope' }), ['/spec/llm/endpoint/secret/key']],
  ])('spec.llm.endpoint: %s', (_label, given, paths) => {
    expect(secretProblems(given, own).map(([at]) => at)).toEqual(paths);
  });

  it("judges loopback and private literals against the operator's list when the reader knows it", () => {
    expect(secretProblems(llm('http://127.0.0.1:8080/v1'), own, []).map(([at]) => at)).toEqual(['/spec/llm/endpoint/url']);
    expect(secretProblems(llm('http://10.0.0.7:8080/v1'), own, []).map(([at]) => at)).toEqual(['/spec/llm/endpoint/url']);
    expect(secretProblems(llm('http://[::1]:8080/v1'), own, []).map(([at]) => at)).toEqual(['/spec/llm/endpoint/url']);
    expect(secretProblems(llm('http://127.0.0.1:8080/v1'), own, ['127.0.0.1:8080'])).toEqual([]);
    // Listed by the operator, a metadata address is still refused unless listed as itself: it is, here.
    expect(secretProblems(llm('http://169.254.169.254/v1'), own, ['169.254.169.254:80'])).toEqual([]);
    // A name is judged when it is resolved.
    expect(secretProblems(llm('http://localhost:8080/v1'), own, [])).toEqual([]);
  });

  it('names the stable code of a refused endpoint', () => {
    expect(secretProblems(llm('http://169.254.169.254/'), own)[0]?.[1]).toMatch(/^UHLP_LLM_ENDPOINT_NOT_ALLOWED: /);
    expect(secretProblems(llm('file:///x'), own)[0]?.[1]).toMatch(/^UHLP_LLM_ENDPOINT_INVALID: /);
  });
});
