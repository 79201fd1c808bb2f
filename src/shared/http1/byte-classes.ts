/**
 * Which bytes HTTP/1.1 allows where in a request (RFC 9110 section 5, RFC 9112),
 * as lookup tables indexed by byte: the request parser checks each byte with one
 * array read, never a regular expression.
 */

/** A table with 1 at every byte in `ranges` (inclusive pairs) and `bytes`. */
function byteClass(ranges: readonly (readonly [number, number])[], bytes = ''): Uint8Array {
  const table = new Uint8Array(256);
  for (const [from, to] of ranges) table.fill(1, from, to + 1);
  for (let i = 0; i < bytes.length; i++) table[bytes.charCodeAt(i)] = 1;
  return table;
}

const DIGITS = [0x30, 0x39] as const;
const ALPHA = [
  [0x41, 0x5a],
  [0x61, 0x7a],
] as const;

/** tchar (RFC 9110 5.6.2): header names, chunk-extension names and token values. */
export const TOKEN = byteClass([DIGITS, ...ALPHA], "!#$%&'*+-.^_`|~");

/** field-vchar, SP and HTAB (RFC 9110 5.5): visible ASCII and obs-text; no CR, LF, NUL, DEL or other control. */
export const FIELD_VALUE = byteClass([[0x20, 0x7e], [0x80, 0xff]], '\t');

/** A request target: visible ASCII only (a space, a control or a byte over 0x7e is not part of any URI). */
export const TARGET = byteClass([[0x21, 0x7e]]);

/** qdtext (RFC 9110 5.6.4): a quoted string's bytes other than `"` and `\`. */
export const QDTEXT = byteClass([[0x20, 0x21], [0x23, 0x5b], [0x5d, 0x7e], [0x80, 0xff]], '\t');

/** The byte after `\` in a quoted-pair (RFC 9110 5.6.4). */
export const QUOTED_PAIR = byteClass([[0x20, 0x7e], [0x80, 0xff]], '\t');

/** Hexadecimal digits to their value; 255 for every other byte. */
export const HEX_VALUE: Uint8Array = (() => {
  const table = new Uint8Array(256).fill(255);
  for (let i = 0; i < 10; i++) table[0x30 + i] = i;
  for (let i = 0; i < 6; i++) {
    table[0x41 + i] = 10 + i;
    table[0x61 + i] = 10 + i;
  }
  return table;
})();
