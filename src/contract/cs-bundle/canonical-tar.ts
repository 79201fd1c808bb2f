/**
 * The canonical tar of a cs-js function version: exactly `function.js` and
 * `manifest.json`, in that (sorted) order, as plain ustar entries with mode
 * 0644, owner and group 0 with empty names, mtime 0, no pax or GNU headers,
 * each padded to 512 bytes and the archive closed by two zero blocks. The same
 * two files therefore always give the same bytes, and so the same sha256, on
 * any machine. Reading is strict: an archive is accepted only when writing its
 * two files again gives exactly its bytes, so no second encoding of one
 * version can exist.
 */
import { createHash } from 'node:crypto';
import { UhlpError } from '../../shared/errors.js';

export const FUNCTION_FILE = 'function.js';
export const MANIFEST_FILE = 'manifest.json';
/** The files of a bundle, in archive order. */
export const BUNDLE_FILES = [FUNCTION_FILE, MANIFEST_FILE] as const;

/** Largest `function.js`. */
export const MAX_FUNCTION_BYTES = 1024 * 1024;
/** Largest `manifest.json`. */
export const MAX_MANIFEST_BYTES = 64 * 1024;
/** Largest archive: both files at their limits, headers and padding. */
export const MAX_BUNDLE_BYTES = 512 * 6 + MAX_FUNCTION_BYTES + MAX_MANIFEST_BYTES;

const BLOCK = 512;

export interface BundleFiles {
  /** The handler module, UTF-8 text. */
  readonly functionJs: string;
  /** The manifest, UTF-8 JSON text, kept byte for byte as written. */
  readonly manifestJson: string;
}

/** The canonical archive of `files`. Throws UHLP_FN_BUNDLE_INVALID for files over their limits. */
export function writeCanonicalTar(files: BundleFiles): Buffer {
  const contents = [Buffer.from(files.functionJs, 'utf8'), Buffer.from(files.manifestJson, 'utf8')];
  checkSize(FUNCTION_FILE, contents[0]!.length, MAX_FUNCTION_BYTES);
  checkSize(MANIFEST_FILE, contents[1]!.length, MAX_MANIFEST_BYTES);
  const blocks: Buffer[] = [];
  BUNDLE_FILES.forEach((name, index) => {
    const content = contents[index]!;
    blocks.push(header(name, content.length), content);
    const pad = (BLOCK - (content.length % BLOCK)) % BLOCK;
    if (pad > 0) blocks.push(Buffer.alloc(pad));
  });
  blocks.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(blocks);
}

/** Hex sha256 of bytes: a bundle's address. */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * The two files of a canonical archive. Anything else (other names, more or
 * fewer entries, other modes or times, extra headers, text that is not UTF-8)
 * is refused with UHLP_FN_BUNDLE_INVALID.
 */
export function readCanonicalTar(bytes: Uint8Array): BundleFiles {
  const archive = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (archive.length > MAX_BUNDLE_BYTES) invalid(`the bundle is over ${MAX_BUNDLE_BYTES} bytes`);
  if (archive.length % BLOCK !== 0) invalid('the bundle is not a whole number of 512-byte tar blocks');
  const texts: string[] = [];
  let offset = 0;
  for (const name of BUNDLE_FILES) {
    if (offset + BLOCK > archive.length) invalid(`the bundle ends before ${name}`);
    const head = archive.subarray(offset, offset + BLOCK);
    const found = head.subarray(0, 100).toString('latin1').replace(/\0+$/, '');
    if (found !== name) invalid(`entry ${texts.length + 1} is "${found.slice(0, 100)}", expected ${name}`);
    const size = Number.parseInt(head.subarray(124, 135).toString('latin1'), 8);
    if (!Number.isSafeInteger(size) || size < 0) invalid(`${name} has no valid size`);
    offset += BLOCK;
    if (offset + size > archive.length) invalid(`${name} is cut short`);
    texts.push(utf8(archive.subarray(offset, offset + size), name));
    offset += Math.ceil(size / BLOCK) * BLOCK;
  }
  const files = { functionJs: texts[0]!, manifestJson: texts[1]! };
  // Whatever the headers said, only the canonical bytes of these files are a bundle.
  if (!writeCanonicalTar(files).equals(archive)) invalid('the bundle is not the canonical tar of its two files (headers, padding, order or trailing data differ)');
  return files;
}

function header(name: string, size: number): Buffer {
  const block = Buffer.alloc(BLOCK);
  block.write(name, 0, 100, 'latin1');
  block.write('0000644\0', 100, 'latin1');
  block.write('0000000\0', 108, 'latin1');
  block.write('0000000\0', 116, 'latin1');
  block.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 'latin1');
  block.write('00000000000\0', 136, 'latin1');
  block.write('        ', 148, 'latin1');
  block.write('0', 156, 'latin1');
  block.write('ustar\0', 257, 'latin1');
  block.write('00', 263, 'latin1');
  block.write('0000000\0', 329, 'latin1');
  block.write('0000000\0', 337, 'latin1');
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return block;
}

function utf8(bytes: Uint8Array, name: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    invalid(`${name} is not UTF-8 text`);
  }
}

function checkSize(name: string, size: number, limit: number): void {
  if (size > limit) invalid(`${name} is ${size} bytes, over the limit of ${limit}`, name);
}

function invalid(message: string, field?: string): never {
  throw new UhlpError('UHLP_FN_BUNDLE_INVALID', message, field !== undefined ? { field } : undefined);
}
