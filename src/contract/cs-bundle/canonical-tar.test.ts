import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readCanonicalTar, sha256Hex, writeCanonicalTar } from './canonical-tar.js';
import { buildBundle, openBundle } from './function-bundle.js';

const fixture = (name: string): Buffer => readFileSync(new URL(`../../../test/fixtures/csjs/${name}`, import.meta.url));
/** The runtime document's example function and manifest, as checked in; its bytes and address must never change. */
const GOLDEN_SHA256 = '18c722eebdccce338d12b995d1cb1470773feb2646c015fffe4b7786ef1d7439';

describe('canonical bundle tar', () => {
  it('gives the golden bytes and sha256 for the golden files', () => {
    const bundle = buildBundle({ functionJs: fixture('golden/function.js').toString('utf8'), manifestJson: fixture('golden/manifest.json').toString('utf8') });
    expect(bundle.sha256).toBe(GOLDEN_SHA256);
    expect(bundle.bytes.equals(fixture('golden.tar'))).toBe(true);
    expect(sha256Hex(fixture('golden.tar'))).toBe(GOLDEN_SHA256);
  });

  it('writes the same bytes for the same files, and reads back exactly what it wrote', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 3000 }), fc.string({ maxLength: 700 }), (functionJs, manifestJson) => {
        const first = writeCanonicalTar({ functionJs, manifestJson });
        expect(writeCanonicalTar({ functionJs, manifestJson }).equals(first)).toBe(true);
        expect(first.length % 512).toBe(0);
        expect(readCanonicalTar(first)).toEqual({ functionJs, manifestJson });
      }),
      { numRuns: 200 },
    );
  });

  it.each([
    ['a trailing block', (tar: Buffer) => Buffer.concat([tar, Buffer.alloc(512)])],
    ['a changed mtime', (tar: Buffer) => patch(tar, 136, '00000000001')],
    ['a changed mode', (tar: Buffer) => patch(tar, 100, '0000755')],
    ['an owner name', (tar: Buffer) => patch(tar, 265, 'root')],
    ['a cut archive', (tar: Buffer) => tar.subarray(0, 1024)],
    ['not a block multiple', (tar: Buffer) => tar.subarray(0, 1000)],
    ['entries in the other order', () => swapped()],
    ['another file name', (tar: Buffer) => patch(tar, 0, 'index.js\0\0\0')],
  ])('refuses %s with UHLP_FN_BUNDLE_INVALID', (_name, mutate) => {
    expect(() => readCanonicalTar(mutate(Buffer.from(fixture('golden.tar'))))).toThrow(expect.objectContaining({ code: 'UHLP_FN_BUNDLE_INVALID' }) as Error);
  });

  it('refuses text that is not UTF-8 and files over their limits', () => {
    const tar = Buffer.from(fixture('golden.tar'));
    tar[512] = 0xff;
    expect(() => readCanonicalTar(tar)).toThrow(expect.objectContaining({ code: 'UHLP_FN_BUNDLE_INVALID' }) as Error);
    expect(() => writeCanonicalTar({ functionJs: 'x'.repeat(1024 * 1024 + 1), manifestJson: '{}' })).toThrow(
      expect.objectContaining({ code: 'UHLP_FN_BUNDLE_INVALID', details: { field: 'function.js' } }) as Error,
    );
  });

  it('opens stored bytes only under their own address', () => {
    expect(openBundle(GOLDEN_SHA256, fixture('golden.tar')).manifest.limits.memoryMb).toBe(64);
    expect(() => openBundle('0'.repeat(64), fixture('golden.tar'))).toThrow(expect.objectContaining({ code: 'UHLP_FN_BUNDLE_INTEGRITY' }) as Error);
  });
});

function patch(tar: Buffer, offset: number, text: string): Buffer {
  const copy = Buffer.from(tar);
  copy.write(text, offset, 'latin1');
  return copy;
}

/** A tar with manifest.json first, checksums right: valid tar, not canonical. */
function swapped(): Buffer {
  const canonical = writeCanonicalTar({ functionJs: 'a', manifestJson: 'b' });
  return Buffer.concat([canonical.subarray(1024, 2048), canonical.subarray(0, 1024), canonical.subarray(2048)]);
}
