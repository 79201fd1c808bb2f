/**
 * A function version's bundle: built from a directory or two texts into the
 * canonical tar and its sha256 (at publish), and opened again from bytes
 * (at execution): hash checked against the address it was asked for, tar read
 * strictly, manifest checked again.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { UhlpError } from '../../shared/errors.js';
import { FUNCTION_FILE, MANIFEST_FILE, readCanonicalTar, sha256Hex, writeCanonicalTar, type BundleFiles } from './canonical-tar.js';
import { parseManifest, type FunctionManifest } from './function-manifest.js';

/** A bundle whose bytes were verified against its sha256 and whose manifest was checked. */
export interface VerifiedBundle {
  readonly sha256: string;
  readonly files: BundleFiles;
  readonly manifest: FunctionManifest;
}

export interface BuiltBundle extends VerifiedBundle {
  /** The canonical tar. */
  readonly bytes: Buffer;
}

/** The canonical bundle of two files, its manifest checked (publish time). */
export function buildBundle(files: BundleFiles): BuiltBundle {
  const manifest = parseManifest(files.manifestJson);
  const bytes = writeCanonicalTar(files);
  return { bytes, sha256: sha256Hex(bytes), files, manifest };
}

/** Reads `function.js` and `manifest.json` of a directory (other files in it are not part of the bundle). */
export async function readBundleDir(dir: string): Promise<BundleFiles> {
  const read = async (name: string): Promise<string> => {
    try {
      return await readFile(path.join(dir, name), 'utf8');
    } catch (error) {
      throw new UhlpError('UHLP_FN_BUNDLE_INVALID', `${path.join(dir, name)} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, {
        field: name,
      });
    }
  };
  return { functionJs: await read(FUNCTION_FILE), manifestJson: await read(MANIFEST_FILE) };
}

/**
 * Opens stored bytes as the bundle `sha256` names (execution time): the bytes
 * must hash to it (UHLP_FN_BUNDLE_INTEGRITY), be a canonical tar
 * (UHLP_FN_BUNDLE_INVALID) and carry a valid manifest (UHLP_FN_MANIFEST_INVALID).
 */
export function openBundle(sha256: string, bytes: Uint8Array): VerifiedBundle {
  const actual = sha256Hex(bytes);
  if (actual !== sha256) {
    throw new UhlpError('UHLP_FN_BUNDLE_INTEGRITY', `the bundle fetched as ${sha256.slice(0, 12)} hashes to ${actual.slice(0, 12)}; it was not run`, { sha256, actual });
  }
  const files = readCanonicalTar(bytes);
  return { sha256, files, manifest: parseManifest(files.manifestJson) };
}
