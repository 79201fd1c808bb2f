/**
 * Fetching the Git sources of Kubernetes apps from a real https Git server on
 * loopback: what is fetched, what is refused before git runs (URLs and refs that
 * could act as options or local access, hosts on non-public addresses), and what
 * git itself refuses when handed hostile values directly (defence in depth).
 */
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultLookup } from '../src/net/address-guard.js';
import { GitSourceCache, runSourceGit } from '../src/apps/git/git-source-cache.js';
import { commitAll, git, initRepo, writeFiles } from './helpers/git-repo.js';
import { startHttpsGitServer, type HttpsGitServer } from './helpers/https-git-server.js';

/** The machine's resolver, plus two names only these tests know (no /etc/hosts edits). */
const LOOPBACK = (name: string): Promise<Array<{ address: string; family: number }>> =>
  name === 'git.test'
    ? Promise.resolve([{ address: '127.0.0.1', family: 4 }])
    : name === 'meta.test'
      ? Promise.resolve([{ address: '169.254.169.254', family: 4 }])
      : defaultLookup(name);

describe('Git sources over https', () => {
  let root: string;
  let server: HttpsGitServer;
  let redirecting: HttpsGitServer;
  let head: string;
  let canaryDir: string;
  const sourcesDir = (): string => mkdtempSync(path.join(os.tmpdir(), 'uhlp-sources-'));

  beforeAll(async () => {
    root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-git-root-'));
    const repo = path.join(root, 'apps-src');
    mkdirSync(repo);
    initRepo(repo);
    writeFiles(repo, { 'apps/hello/scripts/hello.js': 'export default () => ({ hello: true });\n' });
    head = commitAll(repo, 'hello');
    git(root, 'clone', '-q', '--bare', repo, path.join(root, 'apps.git'));
    server = await startHttpsGitServer({ root });
    redirecting = await startHttpsGitServer({ root, redirectTo: `https://localhost:${server.port}` });
    canaryDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-canary-'));
  });
  afterAll(async () => {
    await server?.close();
    await redirecting?.close();
  });

  it('fetches a ref from a loopback server that the core allows, checking its certificate', async () => {
    const cache = new GitSourceCache({ root: sourcesDir(), allowPrivate: [`127.0.0.1:${server.port}`], caFile: server.caFile });
    const resolved = await cache.resolve(`${server.origin}/apps.git`, 'main');
    expect(resolved.commit).toBe(head);
    expect(existsSync(resolved.repoDir)).toBe(true);
    expect(await cache.resolve(`${server.origin}/apps.git`, head)).toEqual(resolved);
    // Without the CA the self-signed certificate is refused.
    const untrusting = new GitSourceCache({ root: sourcesDir(), allowPrivate: [`127.0.0.1:${server.port}`] });
    await expect(untrusting.resolve(`${server.origin}/apps.git`, 'main')).rejects.toMatchObject({ code: 'UHLP_DEFINITIONS_UNREADABLE', message: expect.stringMatching(/certificate/i) as string });
  });

  it('connects to the address it checked: a name only the guard resolves is fetched through the pin', async () => {
    const before = server.requests.length;
    const cache = new GitSourceCache({ root: sourcesDir(), allowPrivate: [`git.test:${server.port}`], caFile: server.caFile, lookup: LOOPBACK });
    expect((await cache.resolve(`https://git.test:${server.port}/apps.git`, 'main')).commit).toBe(head);
    // git never asked DNS for git.test (it does not exist there): curl was pinned to 127.0.0.1, and TLS checked the name.
    expect(server.requests.slice(before).every((r) => r.startsWith(`git.test:${server.port} `))).toBe(true);
  });

  it.each<[string, string, Record<string, unknown>]>([
    ['a name resolving to loopback', 'https://git.test:PORT/apps.git', { addressClass: 'loopback', address: '127.0.0.1' }],
    ['localhost through the real resolver', 'https://localhost:PORT/apps.git', { addressClass: 'loopback' }],
    ['an IPv4 loopback literal', 'https://127.0.0.1:PORT/apps.git', { addressClass: 'loopback' }],
    ['an IPv6 loopback literal', 'https://[::1]:PORT/apps.git', { addressClass: 'loopback', address: '::1' }],
    ['a name resolving to the metadata endpoint', 'https://meta.test:PORT/apps.git', { addressClass: 'cloud-metadata', address: '169.254.169.254' }],
    ['the metadata endpoint over ssh', 'git@169.254.169.254:apps.git', { addressClass: 'cloud-metadata', port: 22 }],
  ])('refuses %s without the allow setting, before any connection', async (_name, template, details) => {
    const before = server.requests.length;
    const url = template.replace('PORT', String(server.port));
    // Listing the name does not open the metadata endpoint; nothing else is listed.
    const cache = new GitSourceCache({ root: sourcesDir(), allowPrivate: [`meta.test:${server.port}`], caFile: server.caFile, lookup: LOOPBACK });
    await expect(cache.resolve(url, 'main')).rejects.toMatchObject({
      code: 'UHLP_GIT_SOURCE_ADDRESS_NOT_ALLOWED',
      message: expect.stringMatching(/^spec\.source\.git\.url: host .* resolves to a .* address/) as string,
      details: expect.objectContaining({ field: 'spec.source.git.url', ...details }) as unknown,
    });
    expect(server.requests.length).toBe(before);
  });

  it.each<[string, string, string]>([
    ['file://', 'file://ROOT/apps.git', 'spec.source.git.url'],
    ['an absolute path', 'ROOT/apps.git', 'spec.source.git.url'],
    ['a relative path', './apps.git', 'spec.source.git.url'],
    ['ext::', 'ext::sh -c touch% CANARY', 'spec.source.git.url'],
    ['ext:: without spaces', 'ext::touch', 'spec.source.git.url'],
    ['an option', '-uoption', 'spec.source.git.url'],
    ['--upload-pack as the URL', '--upload-pack=touch CANARY', 'spec.source.git.url'],
    ['plain http', 'http://127.0.0.1:PORT/apps.git', 'spec.source.git.url'],
  ])('refuses %s as the URL, naming the field, without running git', async (_name, template, field) => {
    const before = server.requests.length;
    const url = template.replace('ROOT', root).replace('CANARY', path.join(canaryDir, 'url')).replace('PORT', String(server.port));
    const cache = new GitSourceCache({ root: sourcesDir(), allowPrivate: [`127.0.0.1:${server.port}`], caFile: server.caFile });
    await expect(cache.resolve(url, 'main')).rejects.toMatchObject({ code: 'UHLP_GIT_SOURCE_INVALID', details: expect.objectContaining({ field }) as unknown });
    expect(existsSync(path.join(canaryDir, 'url'))).toBe(false);
    expect(server.requests.length).toBe(before);
  });

  it.each(['--upload-pack=touch CANARY', '-c', 'main:refs/heads/evil', '+refs/heads/*:refs/heads/*'])('refuses the ref %j, naming spec.source.git.ref', async (template) => {
    const ref = template.replace('CANARY', path.join(canaryDir, 'ref'));
    const cache = new GitSourceCache({ root: sourcesDir(), allowPrivate: [`127.0.0.1:${server.port}`], caFile: server.caFile });
    await expect(cache.resolve(`${server.origin}/apps.git`, ref)).rejects.toMatchObject({
      code: 'UHLP_GIT_SOURCE_INVALID',
      details: expect.objectContaining({ field: 'spec.source.git.ref' }) as unknown,
    });
    expect(existsSync(path.join(canaryDir, 'ref'))).toBe(false);
  });

  it('does not follow a redirect to another host', async () => {
    const before = server.requests.length;
    const cache = new GitSourceCache({ root: sourcesDir(), allowPrivate: [`127.0.0.1:${redirecting.port}`], caFile: redirecting.caFile });
    await expect(cache.resolve(`${redirecting.origin}/apps.git`, 'main')).rejects.toMatchObject({
      code: 'UHLP_DEFINITIONS_UNREADABLE',
      message: expect.stringMatching(/redirect|302/i) as string,
    });
    expect(redirecting.requests.length).toBeGreaterThan(0);
    expect(server.requests.length).toBe(before);
  });

  it('pins ssh to the checked address too, keeping the host key under the name', async () => {
    // Nothing listens on port 1: the refusal names the address ssh was pinned to (git.test is unknown to DNS).
    const cache = new GitSourceCache({ root: sourcesDir(), allowPrivate: ['git.test:1'], lookup: LOOPBACK });
    await expect(cache.resolve('ssh://git@git.test:1/apps.git', 'main')).rejects.toMatchObject({
      code: 'UHLP_DEFINITIONS_UNREADABLE',
      message: expect.stringMatching(/connect to host 127\.0\.0\.1 port 1/) as string,
    });
  });

  describe('git itself, handed hostile values directly (defence in depth)', () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-bare-'));
      git(dir, 'init', '-q', '--bare');
    });

    it.each<[string, string[], RegExp]>([
      ['ext:: transport', ['fetch', '--end-of-options', 'ext::sh -c touch% CANARY', 'main'], /transport 'ext' not allowed/],
      ['file:// transport', ['fetch', '--end-of-options', 'file://ROOT/apps.git', 'main'], /transport 'file' not allowed/],
      ['a local path', ['fetch', '--end-of-options', 'ROOT/apps.git', 'main'], /transport 'file' not allowed/],
      ['plain http', ['fetch', '--end-of-options', 'http://127.0.0.1:PORT/apps.git', 'main'], /transport 'http' not allowed/],
      ['--upload-pack as the URL', ['fetch', '--end-of-options', '--upload-pack=touch CANARY', 'main'], /strange pathname|not allowed|does not appear/],
      ['--upload-pack as the ref', ['fetch', '--end-of-options', 'https://127.0.0.1:PORT/apps.git', '--upload-pack=touch CANARY'], /invalid refspec/],
    ])('refuses %s', async (_name, args, message) => {
      const canary = path.join(canaryDir, 'git');
      const concrete = args.map((a) => a.replace('CANARY', canary).replace('ROOT', root).replace('PORT', String(server.port)));
      await expect(runSourceGit(dir, concrete)).rejects.toMatchObject({ message: expect.stringMatching(message) as string });
      expect(existsSync(canary)).toBe(false);
    });
  });
});
