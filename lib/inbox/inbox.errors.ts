import type { RpcException } from '@nestjs/microservices';
import { ExactlyOnceError } from '../errors/exactly-once.error';
import { problem, PROBLEM_TYPES } from '../problem-details';
import { rpcProblem } from '../rpc/rpc.errors';
import { MESSAGE_FAILED, MESSAGE_ID_MISSING, REPLY_NOT_STORED } from './inbox.messages';

/** A consumed message has no id: it is refused rather than processed without de-duplication. */
export class InboxMessageIdMissingError extends ExactlyOnceError {
  readonly code = 'INBOX_MESSAGE_ID_MISSING';

  /**
   * @param consumer the consumer's name.
   * @param looked where the id was looked for.
   */
  constructor(
    readonly consumer: string,
    readonly looked: string,
  ) {
    super(MESSAGE_ID_MISSING(consumer, looked));
  }
}

/**
 * A message whose inbox record says `failed` (it exhausted `maxAttempts`) was delivered again
 * under `onMaxAttempts: 'rethrow'`: the handler does not run, the broker's dead-lettering decides.
 */
export class InboxMessageFailedError extends ExactlyOnceError {
  readonly code = 'INBOX_MESSAGE_FAILED';

  constructor(
    readonly consumer: string,
    readonly messageId: string,
    readonly attempts: number,
    readonly lastError: string | null,
  ) {
    super(MESSAGE_FAILED(consumer, messageId, attempts, lastError));
  }
}

/**
 * What a duplicate request to an `@IdempotentConsumer()` `@MessagePattern` handler gets: a 409
 * problem (not retryable) as RpcException; the inbox has no reply to replay.
 */
export function replyNotStored(consumer: string): RpcException {
  const { RpcException: Rpc } =
    require('@nestjs/microservices') as typeof import('@nestjs/microservices');
  return new Rpc(
    rpcProblem(
      problem(
        409,
        PROBLEM_TYPES.inboxReplyNotStored,
        'Reply not stored',
        REPLY_NOT_STORED(consumer),
        undefined,
        {
          retryable: false,
        },
      ),
    ),
  );
}
