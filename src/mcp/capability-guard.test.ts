import { describe, expect, it } from 'vitest';
import type { KvCapability, LlmCapability, ShellCapability, WebCapability } from '../apps/schema/app-definition-schema.js';
import { UhlpError } from '../shared/errors.js';
import { checkCallbackCreate, checkKv, checkLlm, checkQueuePublish, checkShellArgv, checkStateWrite, checkTriggerEmit, checkWebRequest, requireCapability, shellEnvironment, shellLimits } from './capability-guard.js';

const shell: ShellCapability = { allow: [['git', 'status'], ['ls']], timeoutMs: 5000, maxStdoutBytes: 100, maxStderrBytes: 50, env: ['LANG', 'ABSENT'] };
const web: WebCapability = { allowHosts: ['api.example.com', '*.example.org', '127.0.0.1'], methods: ['GET', 'POST'], timeoutMs: 3000, maxBodyBytes: 4096, allowPrivate: [] };
const kv: KvCapability = { prefixes: ['ctr:', 'sess:'], ops: ['get', 'set'] };
const llm: LlmCapability = { models: ['small', 'large'], maxTokens: 256 };

function denial(fn: () => unknown): Record<string, unknown> | undefined {
  try {
    fn();
  } catch (error) {
    if (!(error instanceof UhlpError)) throw error;
    expect(error.code).toBe('UHLP_CAPABILITY_DENIED');
    expect(error.statusCode).toBe(403);
    return error.details as Record<string, unknown>;
  }
  return undefined;
}

describe('capability checks', () => {
  it('refuses a capability the app does not have, naming it', () => {
    expect(denial(() => requireCapability({}, 'shell'))).toMatchObject({ capability: 'shell', rule: 'absent' });
    expect(requireCapability({ kv }, 'kv')).toBe(kv);
  });

  it.each([
    [['git', 'status'], true],
    [['git', 'status', '--short'], true],
    [['ls'], true],
    [['ls', '-la', '/'], true],
    [['git'], false],
    [['git', 'push'], false],
    [['git', 'statusx'], false],
    [['lsof'], false],
    [['/bin/ls'], false],
    [['sh', '-c', 'ls; rm -rf /'], false],
  ])('shell argv %j allowed: %s', (argv, allowed) => {
    const details = denial(() => checkShellArgv(shell, argv));
    if (allowed) expect(details).toBeUndefined();
    else expect(details).toMatchObject({ capability: 'shell', rule: 'allow', argv0: argv[0] });
  });

  it('clamps shell limits to the capability and passes only listed variables that exist', () => {
    expect(shellLimits(shell)).toEqual({ timeoutMs: 5000, maxStdoutBytes: 100, maxStderrBytes: 50 });
    expect(shellLimits(shell, 100).timeoutMs).toBe(100);
    expect(shellLimits(shell, 60_000).timeoutMs).toBe(5000);
    expect(shellEnvironment(shell, { LANG: 'C.UTF-8', SECRET: 'x', PATH: '/bin' })).toEqual({ LANG: 'C.UTF-8' });
  });

  it.each([
    ['https://api.example.com/v1', 'GET', undefined],
    ['https://API.Example.com./v1', 'post', undefined],
    ['https://a.b.example.org/', 'GET', undefined],
    ['https://example.org/', 'GET', 'allowHosts'],
    ['https://evil.com/?api.example.com', 'GET', 'allowHosts'],
    ['https://api.example.com.evil.com/', 'GET', 'allowHosts'],
    ['http://127.0.0.1:8080/', 'GET', undefined],
    ['https://api.example.com/', 'DELETE', 'methods'],
    // Not http(s): left to the endpoint, which answers unsupported_scheme without any network.
    ['file:///etc/passwd', 'GET', undefined],
  ])('web %s %s refused by: %s', (url, method, rule) => {
    const details = denial(() => checkWebRequest(web, new URL(url), method));
    if (rule === undefined) expect(details).toBeUndefined();
    else expect(details).toMatchObject({ capability: 'web', rule });
  });

  it('clamps the web timeout and gives the capability body limit', () => {
    expect(checkWebRequest(web, new URL('https://api.example.com'), 'get', 10_000)).toEqual({ method: 'GET', timeoutMs: 3000, maxBodyBytes: 4096 });
    expect(checkWebRequest(web, new URL('https://api.example.com'), 'GET', 10).timeoutMs).toBe(10);
  });

  it.each([
    ['get', 'ctr:a', undefined],
    ['set', 'sess:1', undefined],
    ['del', 'ctr:a', 'ops'],
    ['get', 'other:a', 'prefixes'],
    ['get', 'ct', 'prefixes'],
  ] as const)('kv %s %s refused by: %s', (op, key, rule) => {
    const details = denial(() => checkKv(kv, op, key));
    if (rule === undefined) expect(details).toBeUndefined();
    else expect(details).toMatchObject({ capability: 'kv', rule });
  });

  it('picks the first model by default, refuses unlisted models, clamps maxTokens', () => {
    expect(checkLlm(llm, undefined)).toEqual({ model: 'small', maxTokens: 256 });
    expect(checkLlm(llm, 'large', 1000)).toEqual({ model: 'large', maxTokens: 256 });
    expect(checkLlm(llm, 'large', 10).maxTokens).toBe(10);
    expect(denial(() => checkLlm(llm, 'gpt-huge'))).toMatchObject({ capability: 'llm', rule: 'models', model: 'gpt-huge' });
  });
});

describe('checkStateWrite', () => {
  const state = { write: ['data/**', 'prompts/*.njk', 'App.yaml', '.gitattributes', 'scripts/**'], forbidden: ['data/secret/**', 'scripts/*.MJS'] };
  it.each([
    ['data/a.json', undefined],
    ['data/deep/.hidden', undefined],
    ['prompts/a.njk', undefined],
    ['prompts/sub/a.njk', 'write'],
    ['other.txt', 'write'],
    ['data/secret/key', 'forbidden'],
    ['scripts/x.mjs', 'forbidden'],
    ['scripts/x.js', undefined],
    // Whatever the globs say: the file that decides capabilities, and Git's own files.
    ['app.yaml', 'protected'],
    ['APP.YAML', 'protected'],
    ['App.yaml', 'protected'],
    ['.gitattributes', 'protected'],
    ['data/.gitmodules', 'protected'],
  ])('%s -> %s', (appPath, rule) => {
    if (rule === undefined) {
      expect(() => checkStateWrite(state, appPath)).not.toThrow();
      return;
    }
    let thrown: unknown;
    try {
      checkStateWrite(state, appPath);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: 'UHLP_CAPABILITY_DENIED', details: { capability: 'state', rule, path: appPath } });
  });

  it('checks a path of 1024 characters against globs of many stars in well under 50 ms', () => {
    const stars = { write: ['data/*a*a*a*a*a*a*a*a*b', 'data/**'], forbidden: ['data/*a*a*a*a*a*a*a*a*c', '**/*A*A*A*A*A*A*A*A*d'] };
    const path = `data/${'a'.repeat(1019)}`;
    const started = performance.now();
    expect(() => checkStateWrite(stars, path)).not.toThrow();
    expect(() => checkStateWrite({ ...stars, write: ['data/*a*a*a*a*a*a*a*a*b'] }, path)).toThrow(/matches no write glob/);
    expect(performance.now() - started).toBeLessThan(50);
  });

  it('protects app.yaml even when a glob names it outright', () => {
    expect(() => checkStateWrite({ write: ['**', 'app.yaml'], forbidden: [] }, 'app.yaml')).toThrow(/never written from a sandbox/);
  });
});

describe('source capabilities', () => {
  const deniedBy = (run: () => void): unknown => {
    try {
      run();
    } catch (error) {
      return error instanceof UhlpError ? { code: error.code, details: error.details } : error;
    }
    return undefined;
  };

  it.each<[string, string, string, boolean]>([
    ['own queue by name', 'shop', 'orders', true],
    ['own queue named with the app', 'shop', 'audit-log', false],
    ['another app listed as app/name', 'billing', 'invoices', true],
    ['another app, same name not listed for it', 'billing', 'orders', false],
    ['a queue not listed', 'shop', 'refunds', false],
  ])('queue.publish: %s', (_name, app, queue, allowed) => {
    const denied = deniedBy(() => checkQueuePublish({ publish: ['orders', 'billing/invoices'] }, 'shop', app, queue));
    if (allowed) expect(denied).toBeUndefined();
    else expect(denied).toMatchObject({ code: 'UHLP_CAPABILITY_DENIED', details: { capability: 'queue', rule: 'publish', queue: `${app}/${queue}` } });
  });

  it('trigger.emit and callback.create allow exactly what they list', () => {
    expect(deniedBy(() => checkTriggerEmit({ emit: ['order.created'] }, 'order.created'))).toBeUndefined();
    expect(deniedBy(() => checkTriggerEmit({ emit: ['order.created'] }, 'order.created.x'))).toMatchObject({ details: { capability: 'trigger', rule: 'emit' } });
    expect(deniedBy(() => checkCallbackCreate({ create: ['paid'] }, 'paid'))).toBeUndefined();
    expect(deniedBy(() => checkCallbackCreate({ create: ['paid'] }, 'refund'))).toMatchObject({ details: { capability: 'callback', rule: 'create' } });
  });
});
