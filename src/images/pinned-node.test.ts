import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from './runner-files.js';

const require = createRequire(import.meta.url);
const major = (version: string): number => Number(version.replace(/^v/, '').split('.')[0]);

describe('the Node uhlp runs on', () => {
  it('is pinned to a Node 24 LTS release for every platform it names', () => {
    const pin = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'scripts', 'node-pin.json'), 'utf8')) as {
      version: string;
      packages: Record<string, { name: string; integrity: string }>;
    };
    expect(major(pin.version)).toBe(24);
    for (const [platform, pkg] of Object.entries(pin.packages)) {
      expect(pkg.name).toBe(`node-${platform}`);
      expect(pkg.integrity).toMatch(/^sha512-[A-Za-z0-9+/]{86}==$/);
    }
  });

  it('runs this test process (the set-up puts Node 24 first on PATH)', () => {
    expect(major(process.version)).toBeGreaterThanOrEqual(24);
  });

  it('has the isolate engine past GHSA-864f-rcv7-6rh4 (fixed in isolated-vm 7.0.1 on Node 24)', () => {
    const { version } = require('isolated-vm/package.json') as { version: string };
    const [maj = 0, min = 0, patch = 0] = version.split('.').map(Number);
    expect(maj * 1e6 + min * 1e3 + patch).toBeGreaterThanOrEqual(7_000_001);
  });
});
