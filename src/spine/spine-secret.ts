/**
 * The secret that tells the core's own endpoint hosts and `uhlp stop` apart
 * from anyone else who reaches the spine socket. The core issues a new one at
 * every start and keeps it in a file beside the socket that only its user can
 * read; the std-body host it starts gets it through an inherited pipe, and the
 * lifecycle CLI and a separately started host read the file.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';

/** Name of the secret file, in the directory of the spine socket. */
export const SPINE_SECRET_FILE_NAME = 'spine.secret';

/** 256 bits: far past guessing, even for a client allowed unlimited attempts. */
const SECRET_BYTES = 32;
/** Longest secret accepted on the wire or from the file: a secret is an identifier, not data. */
const MAX_SECRET_LENGTH = 1024;

/** Where the core keeps the secret of the spine served on `socketPath`. */
export function spineSecretPath(socketPath: string): string {
  return path.join(path.dirname(socketPath), SPINE_SECRET_FILE_NAME);
}

/** A fresh secret, as hex. */
export function newSpineSecret(): string {
  return randomBytes(SECRET_BYTES).toString('hex');
}

/**
 * Writes the secret with mode 0600, replacing any earlier file in one rename,
 * so that a reader sees the old secret or the new one and never a partial one.
 * The temporary file is created exclusively: a planted file or symlink there
 * makes the write fail instead of being followed.
 */
export async function writeSpineSecret(file: string, secret: string): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await unlink(temporary).catch(() => undefined);
  const handle = await open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(`${secret}\n`);
  } finally {
    await handle.close();
  }
  // A umask cannot widen 0600, but an inherited ACL default could; say it once more.
  await chmod(temporary, 0o600);
  await rename(temporary, file);
}

/** The secret in `file`, or undefined when it cannot be read (missing, another user's, empty). */
export function readSpineSecret(file: string): string | undefined {
  try {
    const text = readFileSync(file, 'utf8').trim();
    return text.length > 0 && text.length <= MAX_SECRET_LENGTH ? text : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether `offered` is the secret. Both sides are hashed first, so the
 * comparison takes the same time whatever the offered value's length or content.
 */
export function secretMatches(expected: string, offered: unknown): boolean {
  if (typeof offered !== 'string' || offered.length === 0 || offered.length > MAX_SECRET_LENGTH) return false;
  const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(expected), digest(offered));
}
