import type { ResolvedEndpointOptions } from '../idempotency.options';
import { invalidKey, missingKey } from './idempotency.errors';

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

/** RFC 9110 optional white space (SP, HTAB) at either end of a header value. */
const OWS_AROUND = /^[ \t]+|[ \t]+$/g;

type KeyOptions = Pick<ResolvedEndpointOptions, 'required' | 'maxKeyLength' | 'headerName'>;

/**
 * The key the app's function (`keyResolver` / `keyFrom`) returned: undefined when it returned
 * none and none is required; a missing required key or an invalid one throws a 400 problem.
 */
export function keyFromValue(value: unknown, opts: KeyOptions): string | undefined {
  if (value === undefined || value === null || value === '') {
    if (!opts.required) return undefined;
    throw missingKey(undefined);
  }
  return checkIdempotencyKey(String(value), opts.maxKeyLength, 'The idempotency key');
}

/**
 * The key of the `headerName` header's values (HTTP, the GraphQL request's, a transport's):
 * undefined when there is none and none is required; a missing required key, a repeated header
 * or an invalid key throws a 400 problem. Only HTTP's optional white space (SP, HTAB) around the
 * value is dropped, not String#trim's Unicode white space: a key that starts with a no-break
 * space (0xA0) is invalid, not another key.
 */
export function keyFromHeader(values: readonly string[], opts: KeyOptions): string | undefined {
  if (values.length === 0) {
    if (!opts.required) return undefined;
    throw missingKey(opts.headerName);
  }
  if (values.length > 1) {
    throw invalidKey(`the ${opts.headerName} header appears ${values.length} times`);
  }
  return parseIdempotencyKey(values[0].replace(OWS_AROUND, ''), opts.maxKeyLength);
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
