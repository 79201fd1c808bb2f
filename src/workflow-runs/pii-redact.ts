/**
 * The built-in `pii-redact` interceptor's rules: e-mail addresses, card
 * numbers (13 to 19 digits, spaces or dashes between groups, that pass the
 * Luhn check) and phone numbers (7 to 15 digits written as one: an optional
 * `+country`, groups separated by spaces, dots or dashes, an area code in
 * parentheses) become `[email]`, `[card]` and `[phone]`. Dates written with
 * digits (2024-01-15) are not phone numbers.
 *
 * A stream is redacted as it flows (`StreamRedactor`): the tail of what has
 * arrived that could still be the start of an address or a number (the last
 * word, and groups of digits before it) is held back until the next chunk or
 * the end of the stream, so that a number split across chunks is still found.
 */

const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;
/** Digit groups that may be a card: 13-19 digits with single spaces or dashes between. */
const CARD = /(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d])/g;
/** Phone-shaped text; its digits are counted afterwards. */
const PHONE = /(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,}(?:[ .-]\d{2,})*(?![\w])/g;
const DATE = /^\d{1,4}[-./]\d{1,2}[-./]\d{1,4}$/;
/** The longest tail a stream holds back: a longer one is let through rather than delay the stream. */
const MAX_HELD_CHARS = 64;

export function redactPii(text: string): string {
  if (text.length === 0) return text;
  return text
    .replace(EMAIL, '[email]')
    .replace(CARD, (match) => (luhnValid(match.replace(/\D/g, '')) ? '[card]' : match))
    .replace(PHONE, (match) => {
      const digits = match.replace(/\D/g, '').length;
      if (digits < 7 || digits > 15 || DATE.test(match)) return match;
      return '[phone]';
    });
}

/** Every string of a JSON value redacted (keys are left as they are). */
export function redactPiiDeep(value: unknown): unknown {
  if (typeof value === 'string') return redactPii(value);
  if (Array.isArray(value)) return value.map(redactPiiDeep);
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = redactPiiDeep(item);
    return out;
  }
  return value;
}

/** The Luhn checksum of a string of digits. */
export function luhnValid(digits: string): boolean {
  if (!/^\d{2,}$/.test(digits)) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let digit = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

const TOKEN_CHAR = /[A-Za-z0-9._%+@()\-]/;
const NUMBER_CHAR = /[\d()+.\-]/;

/** Redacts one stream's chunks, holding back a tail that may continue in the next chunk. */
export class StreamRedactor {
  private held = '';

  /** The redacted text that can be let through now. */
  push(chunk: string): string {
    const text = this.held + chunk;
    const cut = holdFrom(text);
    this.held = text.slice(cut);
    return redactPii(text.slice(0, cut));
  }

  /** What is still held, redacted: the stream ended. */
  flush(): string {
    const rest = redactPii(this.held);
    this.held = '';
    return rest;
  }
}

/** Where the tail that may still grow into something to redact starts. */
function holdFrom(text: string): number {
  let i = text.length;
  while (i > 0) {
    const c = text[i - 1]!;
    if (TOKEN_CHAR.test(c)) {
      i--;
      continue;
    }
    // A space between digit groups ("4111 1111", "(555) 123") may be inside a number.
    if ((c === ' ' || c === '\t') && i >= 2 && NUMBER_CHAR.test(text[i - 2]!) && (i === text.length || /[\d(]/.test(text[i]!))) {
      i--;
      continue;
    }
    break;
  }
  return Math.max(i, text.length - MAX_HELD_CHARS);
}
