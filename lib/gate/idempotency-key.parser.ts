import { invalidKey } from './idempotency.errors';

const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/**
 * Parses an `Idempotency-Key` header value. Accepts the structured-field string form of the
 * IETF draft (`"8e03978e-…"`, RFC 8941 sf-string with `\"` and `\\` escapes) and the bare form
 * most clients send; both mean the same key. The key must be 1..maxLength visible ASCII
 * characters (0x21–0x7E). Anything else throws a 400 problem.
 */
export function parseIdempotencyKey(value: string, maxLength: number): string {
  return checkIdempotencyKey(value.startsWith('"') ? parseSfString(value) : value, maxLength);
}

/**
 * Checks a key taken from elsewhere than the header (`keyResolver`): the same rules, no quoting.
 * `source` names where it came from in the 400 problem.
 */
export function checkIdempotencyKey(key: string, maxLength: number, source?: string): string {
  if (key.length === 0) throw invalidKey('the key is empty', source);
  if (key.length > maxLength) {
    throw invalidKey(`the key is longer than ${maxLength} characters`, source);
  }
  if (!VISIBLE_ASCII.test(key)) {
    throw invalidKey('the key must contain only visible ASCII characters (0x21-0x7E)', source);
  }
  return key;
}

function parseSfString(value: string): string {
  let out = '';
  for (let i = 1; i < value.length; i++) {
    const ch = value[i];
    if (ch === '\\') {
      const next = value[i + 1];
      if (next !== '"' && next !== '\\') throw invalidKey('invalid escape in the quoted key');
      out += next;
      i++;
    } else if (ch === '"') {
      if (i !== value.length - 1) throw invalidKey('characters after the closing quote');
      return out;
    } else {
      out += ch;
    }
  }
  throw invalidKey('the quoted key has no closing quote');
}
