/**
 * The console's credentials: a file (a mounted Kubernetes Secret, or any file)
 * of one token per line, `<name> <role> <token>`, `#` starting a comment.
 * `name` is who the token is (it goes into the ledger with every action),
 * `role` is `read` (see everything) or `operator` (also approve, redrive,
 * promote, roll back, call a view's tools). Only the tokens' SHA-256 digests
 * are kept, so a logged configuration never shows a token.
 *
 * ```text
 * # uhlp console tokens
 * ada   operator  3f9c...(at least 32 characters)
 * grace read      a71e...
 * ```
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { UhlpError } from '../shared/errors.js';

export type ConsoleRole = 'read' | 'operator';
export const CONSOLE_ROLES: readonly ConsoleRole[] = ['read', 'operator'];

export interface ConsoleToken {
  readonly name: string;
  readonly role: ConsoleRole;
  /** SHA-256 of the token's UTF-8 bytes. */
  readonly digest: Buffer;
}

/** Shortest token: 32 characters (about 190 bits from a password generator's alphabet). */
export const MIN_TOKEN_CHARS = 32;
const NAME = /^[A-Za-z0-9._@-]{1,64}$/;
const TOKEN = /^[\x21-\x7e]+$/;

/** The tokens of a tokens file's text; `source` names it in errors (the variable and the line). */
export function parseConsoleTokens(text: string, source: string): readonly ConsoleToken[] {
  const tokens: ConsoleToken[] = [];
  const names = new Set<string>();
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (line === '') return;
    const where = `${source} line ${index + 1}`;
    const fields = line.split(/\s+/);
    const bad = (expected: string): never => {
      // The line may hold a token: only its first field is shown.
      throw new UhlpError('UHLP_CONFIG_INVALID', `${where} must be ${expected}, got a line starting "${fields[0]!.slice(0, 64)}"`, { name: source, line: index + 1 });
    };
    if (fields.length !== 3) bad('"<name> <role> <token>"');
    const [name, role, token] = fields as [string, string, string];
    if (!NAME.test(name)) bad('a name of 1-64 letters, digits, ".", "_", "@" or "-"');
    if (!(CONSOLE_ROLES as readonly string[]).includes(role)) bad(`a role of ${CONSOLE_ROLES.join(' or ')}`);
    if (token.length < MIN_TOKEN_CHARS || !TOKEN.test(token)) bad(`a token of at least ${MIN_TOKEN_CHARS} printable characters`);
    if (names.has(name)) bad(`a name given once (${name} is given twice)`);
    names.add(name);
    tokens.push(Object.freeze({ name, role: role as ConsoleRole, digest: digestOf(token) }));
  });
  return Object.freeze(tokens);
}

/** The tokens of a file; UHLP_CONFIG_INVALID names the file when it cannot be read. */
export function readConsoleTokens(file: string, variable: string): readonly ConsoleToken[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UhlpError('UHLP_CONFIG_INVALID', `${variable} must be a readable file, got "${file}" (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})`, { name: variable, value: file });
  }
  const tokens = parseConsoleTokens(text, variable);
  if (tokens.length === 0) throw new UhlpError('UHLP_CONFIG_INVALID', `${variable} must hold at least one token, got none in "${file}"`, { name: variable, value: file });
  return tokens;
}

/** The token a presented secret is, compared in constant time; undefined when none. */
export function findConsoleToken(tokens: readonly ConsoleToken[], presented: string): ConsoleToken | undefined {
  const digest = digestOf(presented);
  let found: ConsoleToken | undefined;
  // Every token is compared, so the time taken says nothing about which one matched.
  for (const token of tokens) if (timingSafeEqual(token.digest, digest)) found = token;
  return found;
}

function digestOf(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
