import { ProblemException, PROBLEM_TYPES } from '../../lib/problem-details';
import { parseIdempotencyKey } from '../../lib/gate/idempotency-key.parser';

/** The 400 problem a parse raises, or undefined when the value is accepted. */
function rejection(value: string, max = 255): ProblemException | undefined {
  try {
    parseIdempotencyKey(value, max);
    return undefined;
  } catch (e) {
    if (e instanceof ProblemException) return e;
    throw e;
  }
}

describe('parseIdempotencyKey', () => {
  describe('accepted forms', () => {
    it('takes the bare form as it is', () => {
      expect(parseIdempotencyKey('8e03978e-40d5-43e8-bc93-6894a57f9324', 255)).toBe(
        '8e03978e-40d5-43e8-bc93-6894a57f9324',
      );
    });

    it('unwraps the structured-field string form to the same key as the bare form', () => {
      const bare = '8e03978e-40d5-43e8-bc93-6894a57f9324';
      expect(parseIdempotencyKey(`"${bare}"`, 255)).toBe(parseIdempotencyKey(bare, 255));
    });

    it('resolves the two sf-string escapes \\" and \\\\', () => {
      expect(parseIdempotencyKey('"a\\"b"', 255)).toBe('a"b');
      expect(parseIdempotencyKey('"a\\\\b"', 255)).toBe('a\\b');
      expect(parseIdempotencyKey('"\\\\\\""', 255)).toBe('\\"');
    });

    it('accepts every visible ASCII character in a bare key', () => {
      let all = '';
      for (let c = 0x21; c <= 0x7e; c++) all += String.fromCharCode(c);
      expect(parseIdempotencyKey(all, 255)).toBe(all);
    });

    it('accepts exactly maxLength characters, and counts the quoted key without its quotes', () => {
      expect(parseIdempotencyKey('k'.repeat(255), 255)).toHaveLength(255);
      expect(parseIdempotencyKey(`"${'k'.repeat(255)}"`, 255)).toHaveLength(255);
      expect(parseIdempotencyKey('abcd', 4)).toBe('abcd');
    });

    it('is case-sensitive: keys differing in case stay different', () => {
      expect(parseIdempotencyKey('AbC', 255)).not.toBe(parseIdempotencyKey('abc', 255));
    });
  });

  describe('rejected values: 400 problem+json with the invalid-key type', () => {
    it.each([
      ['empty', ''],
      ['empty quoted string', '""'],
      ['longer than 255', 'k'.repeat(256)],
      ['quoted and longer than 255 inside', `"${'k'.repeat(256)}"`],
      ['space inside (bare)', 'a b'],
      ['space inside (quoted)', '"a b"'],
      ['tab', 'a\tb'],
      ['control character', 'a\u0001b'],
      ['DEL (0x7f)', 'a\u007fb'],
      ['non-ASCII letter', 'clé'],
      ['non-ASCII in the quoted form', '"clé"'],
      ['emoji', 'key-\u{1F600}'],
      ['unterminated quote', '"abc'],
      ['lone quote', '"'],
      ['characters after the closing quote', '"abc"x'],
      ['parameters after the string', '"abc";a=1'],
      ['an invalid escape', '"a\\nb"'],
      ['a trailing backslash', '"abc\\"'],
    ])('%s', (_label, value) => {
      const e = rejection(value);
      expect(e).toBeInstanceOf(ProblemException);
      expect(e!.getStatus()).toBe(400);
      expect(e!.problem).toMatchObject({ status: 400, type: PROBLEM_TYPES.keyInvalid });
      expect(typeof e!.problem.detail).toBe('string');
      expect(e!.problem.detail.length).toBeGreaterThan(0);
    });

    it('applies a smaller configured maxLength', () => {
      expect(rejection('abcde', 4)?.problem.detail).toMatch(/longer than 4/);
    });
  });
});
