/**
 * What a `FROM scratch` image needs to run the host's Node: the binary and exactly
 * the shared libraries it links, found with ldd. Copying the host's own files
 * keeps the sandbox on the same Node the core was tested with, with no registry.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** One host file and the absolute path it takes inside the image. */
export interface RuntimeFile {
  readonly hostPath: string;
  readonly imagePath: string;
}

export interface NodeRuntime {
  readonly binary: RuntimeFile;
  /** Libraries and the dynamic loader, at the paths the binary asks for them. */
  readonly libraries: readonly RuntimeFile[];
}

/** Where the Node binary lives inside every uhlp image. */
export const IMAGE_NODE_PATH = '/usr/local/bin/node';

/**
 * Reads `ldd` output into the files to copy. Lines look like
 * `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)` or, for the loader,
 * `/lib64/ld-linux-x86-64.so.2 (0x...)`; the vDSO has no file and is skipped.
 * A library ldd cannot find makes the image unusable, so it is an error.
 */
export function parseLdd(output: string): RuntimeFile[] {
  const files: RuntimeFile[] = [];
  for (const raw of output.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('linux-vdso') || line.startsWith('linux-gate')) continue;
    if (/=>\s*not found/.test(line)) throw new Error(`ldd: missing library: ${line}`);
    const linked = /^\S+\s+=>\s+(\/\S+)\s+\(0x[0-9a-f]+\)$/.exec(line);
    const loader = /^(\/\S+)\s+\(0x[0-9a-f]+\)$/.exec(line);
    const file = linked?.[1] ?? loader?.[1];
    if (!file) {
      if (line.includes('statically linked')) continue;
      throw new Error(`ldd: cannot read line "${line}"`);
    }
    // The path the binary (or the loader's search) names is where it must sit in
    // the image; the host path may be a symlink, which reading the file follows.
    files.push({ hostPath: file, imagePath: file });
  }
  return files;
}

/** The Node binary at `nodePath` and the libraries it links on this host. */
export async function findNodeRuntime(nodePath: string): Promise<NodeRuntime> {
  const { stdout } = await run('ldd', [nodePath]);
  return { binary: { hostPath: nodePath, imagePath: IMAGE_NODE_PATH }, libraries: parseLdd(stdout) };
}
