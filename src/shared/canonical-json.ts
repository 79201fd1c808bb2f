/**
 * Canonical JSON: object keys sorted by code unit, no whitespace, the same
 * number formatting as JSON.stringify. The ledger hashes this form, so a
 * reordered key or reformatted file never changes a hash, and any changed value
 * always does. It runs twice per request on the hot path, so it builds one
 * string and keeps the path of the value being written only as a stack of keys,
 * turned into text when a value has no canonical form.
 */
export function canonicalJson(value: unknown): string {
  const where: Array<string | number> = [];
  return write(value, where);
}

function write(value: unknown, where: Array<string | number>): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return quote(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonical JSON has no form for ${String(value)} at ${pathText(where)}`);
      return String(value);
    case 'object': {
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) {
          where.push(i);
          const item: unknown = value[i];
          out += (i === 0 ? '' : ',') + (item === undefined ? 'null' : write(item, where));
          where.pop();
        }
        return `${out}]`;
      }
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record).sort();
      let out = '{';
      for (const key of keys) {
        const item = record[key];
        if (item === undefined) continue;
        where.push(key);
        out += (out.length === 1 ? '' : ',') + quote(key) + ':' + write(item, where);
        where.pop();
      }
      return `${out}}`;
    }
    default:
      throw new TypeError(`canonical JSON has no form for a ${typeof value} at ${pathText(where)}`);
  }
}

/** Characters JSON.stringify escapes: quote, backslash, controls, and surrogates (lone ones are escaped). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** JSON.stringify of a string, without its cost for the common string that needs no escape. */
export function quote(text: string): string {
  return NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;
}

function pathText(where: ReadonlyArray<string | number>): string {
  return `$${where.map((key) => (typeof key === 'number' ? `[${key}]` : `.${key}`)).join('')}`;
}
