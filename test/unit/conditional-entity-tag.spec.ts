import fc from 'fast-check';
import {
  EntityTagSyntaxError,
  formatEntityTag,
  parseEntityTag,
  parseEntityTagCondition,
  strongMatch,
  weakMatch,
} from '../../lib/conditional/entity-tag';
import { entityTagToVersion, versionToETag } from '../../lib/conditional/version-tag';

describe('entity tags (RFC 9110 §8.8.3)', () => {
  it('parses strong and weak tags, lists over several field lines, and ignores empty list elements', () => {
    expect(parseEntityTagCondition(['"a"'], 32)).toEqual([{ weak: false, opaque: 'a' }]);
    expect(parseEntityTagCondition(['W/"a" , "b"', ' , "c,d"'], 32)).toEqual([
      { weak: true, opaque: 'a' },
      { weak: false, opaque: 'b' },
      { weak: false, opaque: 'c,d' },
    ]);
    expect(parseEntityTagCondition(['""'], 32)).toEqual([{ weak: false, opaque: '' }]);
    expect(parseEntityTagCondition([' * '], 32)).toBe('*');
    expect(parseEntityTagCondition([], 32)).toBeUndefined();
  });

  it.each([
    ['unquoted', 'abc'],
    ['unterminated', '"abc'],
    ['a space inside', '"a b"'],
    ['a double quote inside', '"a"b"'],
    ['lower-case weak prefix', 'w/"a"'],
    ['missing comma', '"a" "b"'],
    ['star with a tag', '*, "a"'],
    ['empty', ' '],
    ['only commas', ', ,'],
  ])('rejects %s', (_label, value) => {
    expect(() => parseEntityTagCondition([value], 32)).toThrow(EntityTagSyntaxError);
  });

  it('rejects more tags than the limit', () => {
    expect(() =>
      parseEntityTagCondition([Array.from({ length: 4 }, (_, i) => `"${i}"`).join(',')], 3),
    ).toThrow(/more than 3/);
  });

  it('compares strongly for If-Match and weakly for If-None-Match', () => {
    const strong = { weak: false, opaque: '7' };
    const weak = { weak: true, opaque: '7' };
    expect(strongMatch(strong, strong)).toBe(true);
    expect(strongMatch(weak, strong)).toBe(false);
    expect(strongMatch(weak, weak)).toBe(false);
    expect(weakMatch(weak, strong)).toBe(true);
    expect(weakMatch({ weak: false, opaque: '8' }, strong)).toBe(false);
  });

  it('formats and parses back any tag made of allowed characters', () => {
    const etagc = fc
      .integer({ min: 0x21, max: 0x7e })
      .filter((c) => c !== 0x22)
      .map((c) => String.fromCharCode(c));
    fc.assert(
      fc.property(fc.boolean(), fc.array(etagc, { maxLength: 40 }), (weak, chars) => {
        const tag = { weak, opaque: chars.join('') };
        expect(parseEntityTag(formatEntityTag(tag))).toEqual(tag);
      }),
    );
  });
});

describe('versions as ETags', () => {
  it('a counter is its decimal digits, quoted, and parses back', () => {
    expect(versionToETag('counter', 42)).toBe('"42"');
    expect(entityTagToVersion('counter', parseEntityTag('"42"')!)).toBe(42);
  });

  it('a rowversion is its 16 hex digits, quoted, and parses back to the 8 bytes', () => {
    const bytes = Buffer.from('00000000000007d1', 'hex');
    expect(versionToETag('rowversion', bytes)).toBe('"00000000000007d1"');
    expect(entityTagToVersion('rowversion', parseEntityTag('"00000000000007d1"')!)).toEqual(bytes);
  });

  it.each([
    ['counter', 'W/"42"'],
    ['counter', '"042"'],
    ['counter', '"-1"'],
    ['counter', '"1e3"'],
    ['counter', '"1234567890123456"'],
    ['counter', '"00000000000007d1"'],
    ['rowversion', '"7d1"'],
    ['rowversion', '"00000000000007g1"'],
    ['rowversion', '"00000000000007D1"'],
    ['rowversion', 'W/"00000000000007d1"'],
  ] as const)('a %s never matches %s (such an If-Match fails with 412)', (kind, value) => {
    expect(entityTagToVersion(kind, parseEntityTag(value)!)).toBeUndefined();
  });

  it('two different versions never share an ETag', () => {
    fc.assert(
      fc.property(
        fc.nat({ max: Number.MAX_SAFE_INTEGER }),
        fc.nat({ max: Number.MAX_SAFE_INTEGER }),
        (a, b) => {
          fc.pre(a !== b);
          expect(versionToETag('counter', a)).not.toBe(versionToETag('counter', b));
        },
      ),
    );
  });
});
