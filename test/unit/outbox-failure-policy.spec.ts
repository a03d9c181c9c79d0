import { resolveOptions } from '../../lib/idempotency-options.resolver';
import { NonRetryableError, type OutboxMessage } from '../../lib';
import {
  appendFailure,
  decideFailure,
  errorClassOf,
  parseFailures,
} from '../../lib/outbox/outbox-failure.policy';

const message: OutboxMessage = {
  id: 'm-1',
  type: 'payment.captured',
  payload: {},
  headers: {},
  partitionKey: null,
  seq: '1',
  attempts: 0,
  createdAt: new Date(0),
};
const base = { maxAttempts: 3, backoffBaseMs: 1000, backoffMaxMs: 8000 };
const half = () => 0.5;

describe('outbox failure control (options)', () => {
  it('keeps the failure options unset by default', () => {
    const o = resolveOptions().outbox;
    expect(o.retryIf).toBeUndefined();
    expect(o.backoff).toBeUndefined();
    expect(o.maxAttemptsByType).toBeUndefined();
  });

  it.each([
    [{ retryIf: true }, 'outbox.retryIf must be a function (error, message) => boolean'],
    [
      { backoff: 100 },
      'outbox.backoff must be a function (attempt, message, error) => milliseconds',
    ],
    [
      { maxAttemptsByType: { 'a.b': 0 } },
      "outbox.maxAttemptsByType['a.b'] must be an integer >= 1; got 0",
    ],
    [
      { maxAttemptsByType: { 'a.b': 2.5 } },
      "outbox.maxAttemptsByType['a.b'] must be an integer >= 1; got 2.5",
    ],
    [
      { maxAttemptsByType: [3] },
      'outbox.maxAttemptsByType must be a map of message type to attempts',
    ],
    [
      { maxAttemptsByType: 'x' },
      'outbox.maxAttemptsByType must be a map of message type to attempts',
    ],
  ])('refuses %j at boot', (outbox, text) => {
    expect(() => resolveOptions({ outbox: outbox as never })).toThrow(text);
  });

  it('accepts a map or a function for maxAttemptsByType', () => {
    expect(
      resolveOptions({ outbox: { maxAttemptsByType: { a: 1 } } }).outbox.maxAttemptsByType,
    ).toEqual({ a: 1 });
    const fn = () => 4;
    expect(resolveOptions({ outbox: { maxAttemptsByType: fn } }).outbox.maxAttemptsByType).toBe(fn);
  });
});

describe('outbox failure control (decision)', () => {
  const problems: string[] = [];
  const onProblem = (option: string, problem: string) => problems.push(`${option}: ${problem}`);
  beforeEach(() => (problems.length = 0));

  it('a NonRetryableError is dead at the first attempt, without asking retryIf', () => {
    const retryIf = jest.fn(() => true);
    const d = decideFailure(
      { attempt: 1, error: new NonRetryableError('no'), type: message.type, message },
      { ...base, retryIf },
      onProblem,
    );
    expect(d).toEqual({ dead: true, retryInMs: 0, maxAttempts: 3, deadBecause: 'non-retryable' });
    expect(retryIf).not.toHaveBeenCalled();
  });

  it('retryIf false: dead at once; a throwing retryIf retries and is reported', () => {
    const no = decideFailure(
      { attempt: 1, error: new Error('x'), type: message.type, message },
      { ...base, retryIf: () => false },
      onProblem,
      half,
    );
    expect(no).toMatchObject({ dead: true, deadBecause: 'retry-if' });
    const thrown = decideFailure(
      { attempt: 1, error: new Error('x'), type: message.type, message },
      {
        ...base,
        retryIf: () => {
          throw new Error('bug');
        },
      },
      onProblem,
      half,
    );
    expect(thrown).toEqual({ dead: false, retryInMs: 750, maxAttempts: 3 });
    expect(problems).toEqual(['retryIf: threw Error: bug; the message is retried']);
  });

  it('the backoff function decides the delay; nonsense falls back to the default', () => {
    const fn = jest.fn((n: number) => n * 111);
    const d = decideFailure(
      { attempt: 2, error: new Error('x'), type: message.type, message },
      { ...base, backoff: fn },
      onProblem,
    );
    expect(d.retryInMs).toBe(222);
    expect(fn).toHaveBeenCalledWith(2, message, expect.any(Error));
    const bad = decideFailure(
      { attempt: 2, error: new Error('x'), type: message.type, message },
      { ...base, backoff: () => -1 },
      onProblem,
      half,
    );
    // Default for attempt 2: ceiling 2000, equal jitter with random 0.5 → 1500.
    expect(bad.retryInMs).toBe(1500);
    expect(problems).toEqual([
      'backoff: returned -1, not a number of ms >= 0; default backoff used',
    ]);
  });

  it('max attempts per type: the map, the function, and maxAttempts otherwise', () => {
    const decide = (attempt: number, type: string, byType: never) =>
      decideFailure(
        { attempt, error: new Error('x'), type, message: { ...message, type } },
        { ...base, maxAttemptsByType: byType },
        onProblem,
        half,
      );
    expect(decide(3, 'payment.captured', { 'payment.captured': 10 } as never)).toMatchObject({
      dead: false,
      maxAttempts: 10,
    });
    expect(decide(3, 'other', { 'payment.captured': 10 } as never)).toMatchObject({
      dead: true,
      maxAttempts: 3,
    });
    expect(decide(1, 'x', ((t: string) => (t === 'x' ? 1 : undefined)) as never)).toMatchObject({
      dead: true,
      maxAttempts: 1,
    });
    expect(decide(1, 'x', (() => 0) as never)).toMatchObject({ dead: false, maxAttempts: 3 });
    expect(problems).toEqual(['maxAttemptsByType: returned 0 for type x; maxAttempts used']);
  });

  it('history keeps the newest 10 entries and cuts messages to 500 characters', () => {
    let stored: string | null = null;
    for (let i = 1; i <= 12; i++) {
      stored = appendFailure(stored, {
        at: 't',
        attempt: i,
        relay: 'r',
        error: 'Error',
        message: 'y'.repeat(i === 12 ? 900 : 5),
      });
    }
    const list = parseFailures(stored);
    expect(list.map((x) => x.attempt)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(list[9].message).toHaveLength(500);
    expect(parseFailures('not json')).toEqual([]);
  });

  it('names the error class', () => {
    class CustomFailure extends Error {}
    expect(errorClassOf(new CustomFailure('x'))).toBe('CustomFailure');
    expect(errorClassOf(new NonRetryableError('x'))).toBe('NonRetryableError');
    expect(errorClassOf(new TypeError('x'))).toBe('TypeError');
  });
});
