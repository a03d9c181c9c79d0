import { MESSAGE_FAILED, MESSAGE_ID_MISSING } from './inbox.messages';

/** A consumed message has no id: it is refused rather than processed without de-duplication. */
export class InboxMessageIdMissingError extends Error {
  override readonly name = 'InboxMessageIdMissingError';

  constructor(
    readonly consumer: string,
    looked: string,
  ) {
    super(MESSAGE_ID_MISSING(consumer, looked));
  }
}

/**
 * A message whose inbox record says `failed` (it exhausted `maxAttempts`) was delivered again
 * under `onMaxAttempts: 'rethrow'`: the handler does not run, the broker's dead-lettering decides.
 */
export class InboxMessageFailedError extends Error {
  override readonly name = 'InboxMessageFailedError';

  constructor(
    readonly consumer: string,
    readonly messageId: string,
    readonly attempts: number,
    readonly lastError: string | null,
  ) {
    super(MESSAGE_FAILED(consumer, messageId, attempts, lastError));
  }
}
