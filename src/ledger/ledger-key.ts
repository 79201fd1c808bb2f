/**
 * The ledger key: a secret that turns the ledger's hash chain into an HMAC
 * chain, so that someone who can write the ledger files but does not hold the
 * key cannot rewrite an entry and re-seal the chain after it. A plain sha256
 * chain only shows accidental damage and edits that did not bother to re-hash.
 *
 * The key comes from the core's configuration (`UHLP_LEDGER_KEY_FILE`, which is
 * how a Kubernetes Secret is mounted, or `UHLP_LEDGER_KEY`). Entries name the
 * key they were sealed with by its id, a short HMAC of a fixed label under the
 * key: it tells keys apart and says nothing about the key itself.
 */
import { createHmac, hash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { UhlpError } from '../shared/errors.js';

/** 256 bits: HMAC-SHA256 gains nothing from a longer key and is weakened by a shorter one. */
export const LEDGER_KEY_MIN_BYTES = 32;
/** Longer than any sensible secret; guards against pointing the setting at a large file. */
const LEDGER_KEY_MAX_BYTES = 4096;
/** The `hash_alg` of keyed entries and checkpoints; plain entries carry no `hash_alg` (sha256). */
export const KEYED_HASH_ALG = 'hmac-sha256';

export interface LedgerKey {
  /** 16 hex digits naming the key in entries (`key_id`); not secret. */
  readonly id: string;
  /** `hmac-sha256:<hex>` of a text (UTF-8) or of bytes under the key. */
  seal(data: string | Uint8Array): string;
  /**
   * A copy of the secret, to hand the key to the ledger thread. A method, not a
   * field, so that logging or serializing a configuration never shows it.
   */
  secret(): Uint8Array;
}

/** Keys by id: what verification is given (one key, or the old and the new one across a rotation). */
export type LedgerKeyring = ReadonlyMap<string, LedgerKey>;

/** The id of a key: `hmac-sha256(key, "uhlp ledger key id")`, first 16 hex digits. */
export function ledgerKeyId(secret: Uint8Array): string {
  return createHmac('sha256', secret).update('uhlp ledger key id').digest('hex').slice(0, 16);
}

/**
 * A key from its secret bytes; `source` names where they came from in the error
 * (`UHLP_LEDGER_KEY_FILE /run/secrets/ledger`), never the bytes themselves.
 */
export function makeLedgerKey(secret: Uint8Array, source: string): LedgerKey {
  if (secret.length < LEDGER_KEY_MIN_BYTES || secret.length > LEDGER_KEY_MAX_BYTES) {
    throw new UhlpError(
      'UHLP_CONFIG_INVALID',
      `${source} must hold a ledger key of ${LEDGER_KEY_MIN_BYTES}-${LEDGER_KEY_MAX_BYTES} bytes (e.g. \`openssl rand -hex 32\`), got ${secret.length} bytes`,
      { name: source.split(' ')[0] },
    );
  }
  return hmacKey(Buffer.from(secret));
}

/**
 * Reads a key file: its bytes, less one trailing line break (what `echo` and
 * most editors add). A Kubernetes Secret key mounted as a file reads the same way.
 */
export function readLedgerKeyFile(file: string, setting = 'UHLP_LEDGER_KEY_FILE'): LedgerKey {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    throw new UhlpError('UHLP_CONFIG_INVALID', `${setting} ${file} cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, {
      name: setting,
    });
  }
  let end = bytes.length;
  if (end > 0 && bytes[end - 1] === 0x0a) end -= 1;
  if (end > 0 && bytes[end - 1] === 0x0d) end -= 1;
  return makeLedgerKey(bytes.subarray(0, end), `${setting} ${file}`);
}

/** A keyring of the given keys. */
export function ledgerKeyring(keys: readonly LedgerKey[]): LedgerKeyring {
  return new Map(keys.map((key) => [key.id, key]));
}

/**
 * HMAC-SHA256 (RFC 2104) with the padded key blocks prepared once: each seal is
 * two one-shot hashes over a reused buffer. Measured on the ledger's entries, it
 * costs about 1.6 us where createHmac costs about 1.9 us and plain sha256 about
 * 0.55 us; the ledger thread seals two entries per turn. A test holds it to
 * createHmac.
 */
function hmacKey(secret: Buffer): LedgerKey {
  const block = 64;
  const key = secret.length > block ? hash('sha256', secret, 'buffer') : secret;
  const inner = Buffer.alloc(block, 0x36);
  const outer = Buffer.alloc(block + 32, 0);
  outer.fill(0x5c, 0, block);
  for (let i = 0; i < key.length; i++) {
    inner[i]! ^= key[i]!;
    outer[i]! ^= key[i]!;
  }
  let scratch = Buffer.allocUnsafe(16 * 1024);
  inner.copy(scratch);
  return {
    id: ledgerKeyId(secret),
    secret: () => Uint8Array.from(secret),
    seal(data: string | Uint8Array): string {
      // Worst case 3 bytes of UTF-8 per UTF-16 code unit.
      const most = typeof data === 'string' ? data.length * 3 : data.length;
      if (block + most > scratch.length) {
        scratch = Buffer.allocUnsafe(block + most);
        inner.copy(scratch);
      }
      let length = data.length;
      if (typeof data === 'string') length = scratch.write(data, block, 'utf8');
      else scratch.set(data, block);
      hash('sha256', scratch.subarray(0, block + length), 'buffer').copy(outer, block);
      return `${KEYED_HASH_ALG}:${hash('sha256', outer, 'hex')}`;
    },
  };
}
