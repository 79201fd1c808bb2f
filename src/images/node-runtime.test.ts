import { describe, expect, it } from 'vitest';
import { parseLdd } from './node-runtime.js';

describe('parseLdd', () => {
  it('keeps linked libraries and the loader at the paths ldd names, skipping the vDSO', () => {
    const output = [
      '\tlinux-vdso.so.1 (0x00007ffd1c3f2000)',
      '\tlibdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007f0f2f492000)',
      '\tlibstdc++.so.6 => /lib/x86_64-linux-gnu/libstdc++.so.6 (0x00007f0f2f200000)',
      '\t/lib64/ld-linux-x86-64.so.2 (0x00007f0f2f4aa000)',
      '',
    ].join('\n');
    expect(parseLdd(output).map((f) => f.imagePath)).toEqual([
      '/lib/x86_64-linux-gnu/libdl.so.2',
      '/lib/x86_64-linux-gnu/libstdc++.so.6',
      '/lib64/ld-linux-x86-64.so.2',
    ]);
  });

  it('refuses a binary with a library ldd cannot find', () => {
    expect(() => parseLdd('\tlibfoo.so.1 => not found\n')).toThrow(/missing library/);
  });

  it('accepts a static binary as having no libraries', () => {
    expect(parseLdd('\tstatically linked\n')).toEqual([]);
  });
});
