import fc from 'fast-check';
import { canonicalJson } from '../../lib/gate/canonical-json';
import { requestFingerprint } from '../../lib/gate/request-fingerprint';

/** Canonicalization properties (RFC 8785): layout never matters, any value change does. */
const fingerprint = (body: unknown, query = '') =>
  requestFingerprint({
    method: 'POST',
    route: '/payments',
    query,
    headers: [],
    contentType: 'application/json',
    body,
    rawBody: undefined,
    excludeBodyPaths: new Set(),
  });

/** Re-serializes a JSON value with shuffled member order and random whitespace. */
function relayout(value: unknown, rnd: () => number): string {
  const ws = () => [' ', '\n', '\t', '', '  '][Math.floor(rnd() * 5)];
  if (Array.isArray(value)) {
    return `[${ws()}${value.map((v) => relayout(v, rnd)).join(`${ws()},${ws()}`)}${ws()}]`;
  }
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).sort(() => rnd() - 0.5);
    return `{${ws()}${keys.map((k) => `${JSON.stringify(k)}${ws()}:${ws()}${relayout((value as any)[k], rnd)}`).join(`${ws()},${ws()}`)}${ws()}}`;
  }
  return JSON.stringify(value);
}

describe('canonicalization properties', () => {
  it('member order and whitespace never change the fingerprint', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5 }), fc.integer(), (value, seed) => {
        let s = seed;
        const rnd = () => (s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
        const relaid = JSON.parse(relayout(value, rnd));
        expect(canonicalJson(relaid)).toBe(canonicalJson(value));
        expect(fingerprint(relaid).equals(fingerprint(value))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('any change of a value changes the fingerprint', () => {
    const obj = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), {
      minKeys: 1,
      maxKeys: 6,
    });
    fc.assert(
      fc.property(obj, fc.nat(), fc.jsonValue({ maxDepth: 2 }), (value, pick, replacement) => {
        const keys = Object.keys(value);
        const k = keys[pick % keys.length];
        fc.pre(canonicalJson(replacement) !== canonicalJson(value[k]));
        const changed = { ...value, [k]: replacement };
        expect(fingerprint(changed).equals(fingerprint(value))).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('adding or removing a member changes the fingerprint', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 })),
        fc.string({ maxLength: 8 }),
        (value, extra) => {
          fc.pre(!(extra in value));
          expect(fingerprint({ ...value, [extra]: null }).equals(fingerprint(value))).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('the order of query parameters never matters, their values do', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.stringMatching(/^[a-z]{1,5}=[a-z0-9]{0,5}$/), {
          minLength: 1,
          maxLength: 6,
        }),
        (pairs) => {
          const shuffled = [...pairs].reverse();
          expect(fingerprint({}, shuffled.join('&')).equals(fingerprint({}, pairs.join('&')))).toBe(
            true,
          );
          expect(
            fingerprint({}, [...pairs, 'zz=1'].join('&')).equals(fingerprint({}, pairs.join('&'))),
          ).toBe(false);
        },
      ),
      { numRuns: 200 },
    );
  });
});
