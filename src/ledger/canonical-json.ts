/**
 * Canonical JSON: object keys sorted by code unit, no whitespace, the same
 * number formatting as JSON.stringify. The ledger hashes this form, so a
 * reordered key or reformatted file never changes a hash, and any changed value
 * always does.
 */
export function canonicalJson(value: unknown): string {
  return write(value, '$');
}

function write(value: unknown, where: string): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonical JSON has no form for ${String(value)} at ${where}`);
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) return `[${value.map((item, i) => write(item ?? null, `${where}[${i}]`)).join(',')}]`;
      const keys = Object.keys(value).filter((key) => (value as Record<string, unknown>)[key] !== undefined).sort();
      return `{${keys.map((key) => `${JSON.stringify(key)}:${write((value as Record<string, unknown>)[key], `${where}.${key}`)}`).join(',')}}`;
    }
    default:
      throw new TypeError(`canonical JSON has no form for a ${typeof value} at ${where}`);
  }
}
