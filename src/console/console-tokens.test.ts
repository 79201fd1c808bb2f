import { describe, expect, it } from 'vitest';
import { UhlpError } from '../shared/errors.js';
import { findConsoleToken, parseConsoleTokens } from './console-tokens.js';

const ADA = 'a'.repeat(32);
const GRACE = 'g'.repeat(40);

describe('console tokens', () => {
  it('reads names, roles and tokens, skipping comments and blank lines, and keeps only digests', () => {
    const tokens = parseConsoleTokens(`# who\n\nada operator ${ADA}   # the on-call\ngrace read ${GRACE}\n`, 'UHLP_CONSOLE_TOKENS_FILE');
    expect(tokens.map((token) => [token.name, token.role])).toEqual([['ada', 'operator'], ['grace', 'read']]);
    expect(JSON.stringify(tokens)).not.toContain(ADA);
    expect(findConsoleToken(tokens, GRACE)?.name).toBe('grace');
    expect(findConsoleToken(tokens, `${GRACE}x`)).toBeUndefined();
  });

  it.each([
    ['ada operator', 'line 1 must be "<name> <role> <token>"'],
    [`ada admin ${ADA}`, 'a role of read or operator'],
    ['ada read short', 'a token of at least 32 printable characters'],
    [`a/b read ${ADA}`, 'a name of 1-64 letters'],
    [`ada read ${ADA}\nada operator ${GRACE}`, 'ada is given twice'],
  ])('refuses %j, naming the line and never the token', (text, reason) => {
    let error: unknown;
    try {
      parseConsoleTokens(text, 'UHLP_CONSOLE_TOKENS_FILE');
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(UhlpError);
    expect((error as UhlpError).code).toBe('UHLP_CONFIG_INVALID');
    expect((error as UhlpError).message).toContain(reason);
    expect((error as UhlpError).message).not.toContain(ADA);
  });
});
