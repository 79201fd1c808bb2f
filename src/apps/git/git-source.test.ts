import { describe, expect, it } from 'vitest';
import { checkGitSourcePath, checkGitSourceRef, gitSourceProblems, parseGitSourceUrl } from './git-source.js';
import { validateAppDefinition } from '../validation/validate-app-definition.js';

const URL_FIELD = { code: 'UHLP_GIT_SOURCE_INVALID', details: expect.objectContaining({ field: 'spec.source.git.url' }) as unknown };
const REF_FIELD = { code: 'UHLP_GIT_SOURCE_INVALID', details: expect.objectContaining({ field: 'spec.source.git.ref' }) as unknown };

describe('Git source URLs', () => {
  it.each<[string, { url: string; transport: string; host: string; port: number }]>([
    ['https://git.example.com/team/apps.git', { url: 'https://git.example.com/team/apps.git', transport: 'https', host: 'git.example.com', port: 443 }],
    ['HTTPS://Git.Example.com:8443/apps', { url: 'https://git.example.com:8443/apps', transport: 'https', host: 'git.example.com', port: 8443 }],
    ['https://deploy@git.example.com/apps.git', { url: 'https://deploy@git.example.com/apps.git', transport: 'https', host: 'git.example.com', port: 443 }],
    ['https://127.0.0.1:9443/apps.git', { url: 'https://127.0.0.1:9443/apps.git', transport: 'https', host: '127.0.0.1', port: 9443 }],
    ['https://[::1]:9443/apps.git', { url: 'https://[::1]:9443/apps.git', transport: 'https', host: '::1', port: 9443 }],
    ['ssh://git@git.example.com/team/apps.git', { url: 'ssh://git@git.example.com/team/apps.git', transport: 'ssh', host: 'git.example.com', port: 22 }],
    ['ssh://git@git.example.com:2222/~/apps.git', { url: 'ssh://git@git.example.com:2222/~/apps.git', transport: 'ssh', host: 'git.example.com', port: 2222 }],
    ['git@github.com:team/apps.git', { url: 'git@github.com:team/apps.git', transport: 'ssh', host: 'github.com', port: 22 }],
    ['git.example.com:apps.git', { url: 'git.example.com:apps.git', transport: 'ssh', host: 'git.example.com', port: 22 }],
  ])('accepts %s', (url, expected) => {
    expect(parseGitSourceUrl(url)).toEqual(expected);
  });

  it.each<[string, RegExp]>([
    ['file:///srv/apps.git', /uses file:\/\/; app sources are fetched over https:\/\/ or ssh:\/\/ only/],
    ['FILE:///etc', /uses file:\/\//],
    ['/srv/apps.git', /is a local path/],
    ['./apps', /is a local path/],
    ['../apps', /is a local path/],
    ['~/apps', /is a local path/],
    ['apps', /not an https:\/\/, ssh:\/\/ or scp-like/],
    ['srv/apps:x', /not an https:\/\/, ssh:\/\/ or scp-like/],
    ['ext::sh -c touch% /tmp/pwned', /whitespace or control characters/],
    ['ext::sh', /<transport>::<address>/],
    ['fd::3', /<transport>::<address>/],
    ['host::x', /<transport>::<address>/],
    ['-uoption', /starts with "-"/],
    ['--upload-pack=touch /tmp/x', /starts with "-"/],
    ['http://git.example.com/apps.git', /plain http:\/\//],
    ['git://git.example.com/apps.git', /uses git:\/\//],
    ['https://user:secret@git.example.com/apps.git', /embeds a password/],
    ['https://git.example.com/apps.git?x=1', /query or fragment/],
    ['https://git.example.com\\@evil.test/apps.git', /backslash/],
    ['https://git.example.com/apps.git\n', /whitespace or control/],
    ['ssh://-oProxyCommand=touch%20x/apps', /not a DNS name or IP address/],
    ['ssh://git.example.com/', /names no repository path/],
    ['ssh://-u@git.example.com/apps', /user name git cannot take safely/],
    ['-oProxyCommand=x@host:apps', /starts with "-"/],
    ['git@-host:apps', /not a DNS name or IP address/],
    ['git@host:-apps', /repository path starting with "-"/],
    ['ssh://git.example.com:99999/apps', /bad port/],
    ['https://exa mple.com/x', /whitespace/],
  ])('refuses %j naming spec.source.git.url', (url, message) => {
    expect(() => parseGitSourceUrl(url)).toThrow(expect.objectContaining({ ...URL_FIELD, message: expect.stringMatching(message) as unknown }) as Error);
  });
});

describe('Git source refs and paths', () => {
  it.each(['HEAD', 'main', 'refs/heads/main', 'release/2026-01', 'v1.2.3', 'a'.repeat(40).replace(/a/g, 'f'), '0'.repeat(64)])('accepts the ref %s', (ref) => {
    expect(checkGitSourceRef(ref)).toBe(ref);
  });

  it.each([
    '--upload-pack=touch /tmp/x',
    '-c',
    '-ccore.sshCommand=x',
    'main:refs/heads/evil',
    '+main',
    'refs/heads/*',
    'main^',
    'main..other',
    'a/.hidden',
    'main.lock',
    'main/',
    'a//b',
    'main ',
    '@{-1}',
    '',
  ])('refuses the ref %j naming spec.source.git.ref', (ref) => {
    expect(() => checkGitSourceRef(ref)).toThrow(expect.objectContaining(REF_FIELD) as Error);
  });

  it('accepts a directory inside the repository and refuses the rest', () => {
    expect(checkGitSourcePath('apps/shop/')).toBe('apps/shop');
    for (const bad of ['/etc', '../other', 'apps/../..', '.', 'apps//shop', '-x', ':(glob)*', 'a\\b', 'a\nb']) {
      expect(() => checkGitSourcePath(bad), bad).toThrow(expect.objectContaining({ code: 'UHLP_GIT_SOURCE_INVALID', details: expect.objectContaining({ field: 'spec.source.git.path' }) }) as Error);
    }
  });

  it('lists every problem of a source with its field', () => {
    expect(gitSourceProblems({ url: 'file:///x', ref: '--upload-pack=x', path: '../x' }).map((p) => [p.field, p.code])).toEqual([
      ['url', 'UHLP_GIT_SOURCE_INVALID'],
      ['ref', 'UHLP_GIT_SOURCE_INVALID'],
      ['path', 'UHLP_GIT_SOURCE_INVALID'],
    ]);
    expect(gitSourceProblems({ url: 'https://git.example.com/a.git', ref: 'main' })).toEqual([]);
  });
});

describe('the validator', () => {
  const app = (git: Record<string, unknown>): unknown => ({
    apiVersion: 'uhlp.dev/v1alpha1',
    kind: 'AppDefinition',
    metadata: { name: 'shop' },
    spec: { pools: [{ name: 'main' }], components: [{ id: 'c', handler: 'JIT', pool: 'main', jit: { script: 'a.js' } }], source: { git } },
  });

  it('reports a bad source URL and ref at their fields, with the code', () => {
    const result = validateAppDefinition(app({ url: 'ext::sh -c id', ref: '--upload-pack=id' }), { file: 'ns/shop', appDirName: 'shop', fileExists: () => true });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems.map((p) => [p.path, p.reason])).toEqual([
      ['/spec/source/git/url', 'UHLP_GIT_SOURCE_INVALID: contains whitespace or control characters'],
      ['/spec/source/git/ref', 'UHLP_GIT_SOURCE_INVALID: starts with "-", which git would read as an option'],
    ]);
  });

  it('passes a good source', () => {
    expect(validateAppDefinition(app({ url: 'https://git.example.com/a.git' }), { file: 'ns/shop', appDirName: 'shop', fileExists: () => true }).ok).toBe(true);
  });
});
