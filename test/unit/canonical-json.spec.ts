import { canonicalJson, MAX_JSON_DEPTH } from '../../lib/gate/canonical-json';
import { ProblemException, PROBLEM_TYPES } from '../../lib/problem-details';

const nest = (levels: number): unknown => {
  let v: unknown = 0;
  for (let i = 0; i < levels; i++) v = i % 2 ? [v] : { a: v };
  return v;
};

describe('canonicalJson (RFC 8785 JCS)', () => {
  it('does not depend on member order', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, 2], c: null } })).toBe(
      canonicalJson({ a: { c: null, d: [1, 2] }, b: 1 }),
    );
    expect(canonicalJson({ b: 1, a: 2 })).toBe('{"a":2,"b":1}');
  });

  it('does not depend on whitespace of the source text', () => {
    const compact = JSON.parse('{"amount":5,"currency":"USD","customerId":"c-1","tags":["x","y"]}');
    const spaced = JSON.parse(
      '{\n  "tags" : [ "x" ,\t"y" ],\r\n  "customerId": "c-1", "currency" :"USD",  "amount" : 5 }',
    );
    expect(canonicalJson(spaced)).toBe(canonicalJson(compact));
  });

  it('keeps array order (arrays are ordered data)', () => {
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
  });

  it('writes numbers in the ECMAScript shortest form (RFC 8785 section 3.2.2.3)', () => {
    const parsed = JSON.parse(
      '[333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001, 1E2, -0, 1e21, 1e-7, 100]',
    );
    expect(canonicalJson(parsed)).toBe(
      '[333333333.3333333,1e+30,4.5,0.002,1e-27,100,0,1e+21,1e-7,100]',
    );
  });

  it('makes different spellings of one number equal', () => {
    expect(canonicalJson(JSON.parse('{"a":1.0}'))).toBe(canonicalJson(JSON.parse('{"a":1}')));
    expect(canonicalJson(JSON.parse('{"a":1e1}'))).toBe(canonicalJson(JSON.parse('{"a":10}')));
  });

  it('escapes strings as RFC 8785 requires (only what JSON must escape; other characters literal)', () => {
    const parsed = JSON.parse('"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/"');
    expect(canonicalJson(parsed)).toBe('"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"');
  });

  it('sorts member names by UTF-16 code units, not by code points or locale', () => {
    // RFC 8785 section 3.2.3: the emoji (surrogates D83D DE00) sorts before U+FB33, though its code point is higher.
    const value = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    // (Read the order from the text: JSON.parse would move the integer-like key "1" first.)
    const out = canonicalJson(value);
    const order = Object.values(value).sort(
      (x, y) => out.indexOf(`"${x}"`) - out.indexOf(`"${y}"`),
    );
    expect(order).toEqual([
      'Carriage Return',
      'One',
      'Control',
      'Latin Small Letter O With Diaeresis',
      'Euro Sign',
      'Emoji: Grinning Face',
      'Hebrew Letter Dalet With Dagesh',
    ]);
    // Upper case before lower case (code unit order), unlike a locale compare.
    expect(canonicalJson({ b: 1, B: 2, a: 3 })).toBe('{"B":2,"a":3,"b":1}');
  });

  it('drops undefined members and serializes toJSON values (a Date) like JSON.stringify', () => {
    expect(canonicalJson({ a: undefined, b: new Date('2024-01-02T03:04:05.000Z') })).toBe(
      '{"b":"2024-01-02T03:04:05.000Z"}',
    );
  });

  it('leaves out excluded dot paths, nowhere else', () => {
    const body = { meta: { clientTimestamp: 1, source: 'app' }, clientTimestamp: 2 };
    const out = canonicalJson(body, new Set(['meta.clientTimestamp']));
    expect(out).toBe('{"clientTimestamp":2,"meta":{"source":"app"}}');
    expect(canonicalJson({ items: [{ ts: 1, v: 2 }] }, new Set(['items.0.ts']))).toBe(
      '{"items":[{"v":2}]}',
    );
  });

  it(`accepts nesting up to ${MAX_JSON_DEPTH} levels`, () => {
    expect(() => canonicalJson(nest(MAX_JSON_DEPTH))).not.toThrow();
  });

  it('rejects deeper nesting with a 400 problem instead of overflowing the stack', () => {
    for (const levels of [MAX_JSON_DEPTH + 1, 50_000]) {
      let error: unknown;
      try {
        canonicalJson(nest(levels));
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ProblemException);
      expect((error as ProblemException).problem).toMatchObject({
        status: 400,
        type: PROBLEM_TYPES.bodyTooDeep,
      });
    }
  });
});
