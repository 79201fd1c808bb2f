/**
 * The package cache of stdio MCP servers against the real npm registry: a
 * package is installed once, under the hash of its tarball, read-only, with its
 * dependencies and without install scripts; a tarball whose integrity is not the
 * one named is refused and leaves nothing behind.
 */
import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { npmEnvironment } from '../../src/mcp/federation/npm-environment.js';
import { PackageCache, integrityKey } from '../../src/mcp/federation/package-cache.js';

const MEMORY = { name: '@modelcontextprotocol/server-memory', version: '2026.8.31' };

describe('the MCP package cache', () => {
  it('installs a package once, by the hash of its tarball, read-only, and finds its bin', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-package-cache-'));
    const cache = new PackageCache(root, { env: npmEnvironment(process.env) });
    const installed = await cache.install(MEMORY);
    expect(installed.integrity).toMatch(/^sha512-/);
    expect(installed.dir).toBe(path.join(root, integrityKey(installed.integrity)));
    expect(installed.entry).toBe('node_modules/@modelcontextprotocol/server-memory/dist/index.js');
    expect(statSync(path.join(installed.dir, installed.entry)).mode & 0o222).toBe(0);
    // Its dependencies came along (the SDK it imports).
    expect(readdirSync(path.join(installed.dir, 'node_modules', '@modelcontextprotocol'))).toContain('sdk');
    const started = performance.now();
    expect(await new PackageCache(root, { env: npmEnvironment(process.env) }).install({ ...MEMORY, integrity: installed.integrity })).toEqual(installed);
    // A second core on the same cache finds it without npm.
    expect(performance.now() - started).toBeLessThan(1000);
  }, 120_000);

  it('refuses a tarball whose integrity is not the one named, and keeps nothing of it', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-package-cache-'));
    const wrong = `sha512-${Buffer.alloc(64, 7).toString('base64')}`;
    await expect(new PackageCache(root, { env: npmEnvironment(process.env) }).install({ ...MEMORY, integrity: wrong })).rejects.toMatchObject({ code: 'UHLP_MCP_PACKAGE_INTEGRITY' });
    expect(readdirSync(root)).toEqual([]);
  }, 120_000);

  it('refuses a package with no such bin', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-package-cache-'));
    await expect(new PackageCache(root, { env: npmEnvironment(process.env) }).install({ ...MEMORY, bin: 'not-a-bin' })).rejects.toMatchObject({ code: 'UHLP_MCP_PACKAGE_FAILED' });
  }, 120_000);
});
