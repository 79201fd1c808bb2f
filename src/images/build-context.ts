/**
 * A Docker build context made in memory: a tar of the Dockerfile and the files
 * to COPY. Entries are sorted and carry fixed owners and times so that the same
 * inputs always give the same bytes.
 */
import { Readable } from 'node:stream';
import tar from 'tar-stream';

export interface ContextEntry {
  /** Path inside the context, relative, with `/` separators. */
  readonly name: string;
  /** File contents; omitted for a directory. */
  readonly content?: Buffer;
  /** Permission bits. @defaultValue 0o644 for files, 0o755 for directories */
  readonly mode?: number;
  /**
   * Modification time. Python's compiled modules (`__pycache__/*.pyc`) record their
   * source's, and are used only while it matches. @defaultValue the epoch
   */
  readonly mtime?: Date;
}

/** Packs `entries` into a tar and returns it as one Buffer. */
export async function packContext(entries: readonly ContextEntry[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  const collected = new Promise<Buffer>((resolve, reject) => {
    pack.on('data', (chunk: Buffer) => chunks.push(chunk));
    pack.on('end', () => resolve(Buffer.concat(chunks)));
    pack.on('error', reject);
  });
  const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of sorted) {
    const common = { name: entry.name, mtime: entry.mtime ?? new Date(0), uid: 0, gid: 0 };
    await new Promise<void>((resolve, reject) => {
      const done = (error?: Error | null): void => (error ? reject(error) : resolve());
      if (entry.content === undefined) pack.entry({ ...common, type: 'directory', mode: entry.mode ?? 0o755 }, done);
      else pack.entry({ ...common, type: 'file', mode: entry.mode ?? 0o644 }, entry.content, done);
    });
  }
  pack.finalize();
  return collected;
}

/** The context as the stream dockerode's buildImage reads. */
export function contextStream(context: Buffer): Readable {
  return Readable.from([context]);
}
