import { mkdtemp, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newSpineSecret, readSpineSecret, secretMatches, spineSecretPath, writeSpineSecret } from './spine-secret.js';

describe('spine secret', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'uhlp-spine-secret-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is 256 random bits, new every time', () => {
    const secrets = new Set(Array.from({ length: 100 }, () => newSpineSecret()));
    expect(secrets.size).toBe(100);
    for (const secret of secrets) expect(secret).toMatch(/^[0-9a-f]{64}$/);
  });

  it('lives beside the spine socket', () => {
    expect(spineSecretPath('/data/run/core.sock')).toBe('/data/run/spine.secret');
  });

  it.each([
    ['the secret', (s: string) => s, true],
    ['nothing', () => undefined, false],
    ['an empty string', () => '', false],
    ['a number', () => 42, false],
    ['another secret', () => newSpineSecret(), false],
    ['a prefix', (s: string) => s.slice(0, 63), false],
    ['the secret and more', (s: string) => `${s}0`, false],
    ['upper case', (s: string) => s.toUpperCase(), false],
    ['a huge string', () => 'x'.repeat(1 << 20), false],
  ])('matches %s', (_name, offer, expected) => {
    const secret = newSpineSecret();
    expect(secretMatches(secret, offer(secret))).toBe(expected);
  });

  it('writes the file 0600, replaces an earlier one, and reads it back', async () => {
    const file = join(dir, 'spine.secret');
    await writeFile(file, 'old\n', { mode: 0o644 });
    const secret = newSpineSecret();
    await writeSpineSecret(file, secret);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(readSpineSecret(file)).toBe(secret);
  });

  it('replaces a planted symlink instead of writing through it', async () => {
    const target = join(dir, 'target');
    await writeFile(target, 'keep');
    const file = join(dir, 'spine.secret');
    await symlink(target, file);
    await writeSpineSecret(file, newSpineSecret());
    expect((await stat(file)).isFile()).toBe(true);
    expect(readSpineSecret(target)).toBe('keep');
  });

  it('reads nothing from a missing or empty file', async () => {
    expect(readSpineSecret(join(dir, 'missing'))).toBeUndefined();
    await writeFile(join(dir, 'empty'), '\n');
    expect(readSpineSecret(join(dir, 'empty'))).toBeUndefined();
  });
});
