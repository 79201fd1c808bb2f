import { describe, expect, it } from 'vitest';
import tar from 'tar-stream';
import { packContext, type ContextEntry } from './build-context.js';

async function listTar(buffer: Buffer): Promise<Array<{ name: string; mode: number | undefined; body: string }>> {
  const extract = tar.extract();
  const entries: Array<{ name: string; mode: number | undefined; body: string }> = [];
  const done = new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        entries.push({ name: header.name, mode: header.mode, body: Buffer.concat(chunks).toString() });
        next();
      });
    });
    extract.on('finish', resolve);
    extract.on('error', reject);
  });
  extract.end(buffer);
  await done;
  return entries;
}

describe('packContext', () => {
  const entries: ContextEntry[] = [
    { name: 'rootfs/usr/local/bin/node', content: Buffer.from('ELF'), mode: 0o755 },
    { name: 'Dockerfile', content: Buffer.from('FROM scratch\n') },
    { name: 'rootfs/tmp', mode: 0o1777 },
  ];

  it('gives the same bytes whatever the entry order, so its hash names its inputs', async () => {
    const forward = await packContext(entries);
    const backward = await packContext([...entries].reverse());
    expect(forward.equals(backward)).toBe(true);
  });

  it('keeps names, contents and modes', async () => {
    const listed = await listTar(await packContext(entries));
    expect(listed).toEqual([
      { name: 'Dockerfile', mode: 0o644, body: 'FROM scratch\n' },
      { name: 'rootfs/tmp', mode: 0o1777, body: '' },
      { name: 'rootfs/usr/local/bin/node', mode: 0o755, body: 'ELF' },
    ]);
  });

  it('changes when one file changes', async () => {
    const changed = entries.map((e) => (e.name === 'Dockerfile' ? { ...e, content: Buffer.from('FROM scratch \n') } : e));
    expect((await packContext(changed)).equals(await packContext(entries))).toBe(false);
  });
});
