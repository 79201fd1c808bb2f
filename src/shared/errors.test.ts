import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOG } from './errors.js';

describe('docs/errors.md', () => {
  const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  const documented = new Map<string, number>();
  for (const match of doc.matchAll(/^\| `(UHLP_[A-Z_]+)` \| (\d{3}) \|/gm)) documented.set(match[1]!, Number(match[2]));

  it('documents every code of the catalog with its status', () => {
    for (const [code, { status }] of Object.entries(ERROR_CATALOG)) {
      expect(documented.get(code), `docs/errors.md row for ${code}`).toBe(status);
    }
  });

  it('documents no code that the catalog lacks', () => {
    for (const code of documented.keys()) expect(Object.keys(ERROR_CATALOG)).toContain(code);
  });
});
