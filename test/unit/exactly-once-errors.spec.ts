import {
  EntityTagSyntaxError,
  ExactlyOnceError,
  IdempotencyMisconfiguredError,
  IdempotencyModule,
  IdempotencyOptionsError,
  InboxMessageFailedError,
  InboxMessageIdMissingError,
  InvalidOutboxEventError,
  KafkaBatchInFlightError,
  OutboxPublishTimeoutError,
  OutboxTransactionRequiredError,
  PublisherUnavailableError,
  StoredAnswerError,
} from '../../lib';
import { CliFailure, CliUsageError } from '../../lib/cli/cli-command';
import { resolveOptions } from '../../lib/idempotency-options.resolver';

describe('ExactlyOnceError: one base, name = class name, a stable code, data in fields', () => {
  const cause = new Error('ECONNREFUSED');
  it.each<[ExactlyOnceError, string, string, Record<string, unknown>]>([
    [
      new OutboxTransactionRequiredError(true),
      'OutboxTransactionRequiredError',
      'OUTBOX_TRANSACTION_REQUIRED',
      { managerGiven: true },
    ],
    [
      new InvalidOutboxEventError('bad', 2, 'no type'),
      'InvalidOutboxEventError',
      'OUTBOX_EVENT_INVALID',
      { index: 2, reason: 'no type' },
    ],
    [
      new OutboxPublishTimeoutError('slow', 500),
      'OutboxPublishTimeoutError',
      'OUTBOX_PUBLISH_TIMEOUT',
      { timeoutMs: 500 },
    ],
    [
      new PublisherUnavailableError('down', { cause }),
      'PublisherUnavailableError',
      'OUTBOX_PUBLISHER_UNAVAILABLE',
      { cause },
    ],
    [new KafkaBatchInFlightError(), 'KafkaBatchInFlightError', 'KAFKA_BATCH_IN_FLIGHT', {}],
    [
      new InboxMessageIdMissingError('payments', 'headers'),
      'InboxMessageIdMissingError',
      'INBOX_MESSAGE_ID_MISSING',
      { consumer: 'payments', looked: 'headers' },
    ],
    [
      new InboxMessageFailedError('payments', 'm-1', 5, 'boom'),
      'InboxMessageFailedError',
      'INBOX_MESSAGE_FAILED',
      { consumer: 'payments', messageId: 'm-1', attempts: 5, lastError: 'boom' },
    ],
    [
      new IdempotencyMisconfiguredError('no tables'),
      'IdempotencyMisconfiguredError',
      'MISCONFIGURED',
      {},
    ],
    [new IdempotencyOptionsError('bad ttl'), 'IdempotencyOptionsError', 'OPTIONS_INVALID', {}],
    [
      new StoredAnswerError('key-unknown', 'no key', 'k2'),
      'StoredAnswerError',
      'STORED_ANSWER_UNREADABLE',
      { fault: 'key-unknown', keyId: 'k2' },
    ],
    [
      new EntityTagSyntaxError('the header is empty'),
      'EntityTagSyntaxError',
      'ENTITY_TAG_SYNTAX',
      {},
    ],
    [new CliUsageError('usage'), 'CliUsageError', 'CLI_USAGE', {}],
    [new CliFailure('down'), 'CliFailure', 'CLI_FAILURE', {}],
  ])('%s', (error, name, code, fields) => {
    expect(error).toBeInstanceOf(ExactlyOnceError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe(name);
    expect(error.constructor.name).toBe(name);
    expect(error.code).toBe(code);
    expect(error).toMatchObject(fields);
    expect(String(error)).toBe(`${name}: ${error.message}`);
  });

  it('a wrong option fails as IdempotencyOptionsError naming the option', () => {
    const thrown = (() => {
      try {
        resolveOptions({ outbox: { batchSize: 0 } });
      } catch (e) {
        return e;
      }
    })();
    expect(thrown).toBeInstanceOf(IdempotencyOptionsError);
    expect((thrown as Error).message).toBe(
      'IdempotencyModule: outbox.batchSize must be an integer between 1 and 1000',
    );
    expect(() => IdempotencyModule.forRootAsync({})).toThrow(IdempotencyOptionsError);
  });
});
