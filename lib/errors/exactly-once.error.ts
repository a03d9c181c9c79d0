/**
 * The base of every error the library throws at the app: catch them all with
 * `instanceof ExactlyOnceError`, tell them apart with `instanceof` of a subclass or with `code`
 * (a stable string, unchanged across versions, unlike the message text). `name` is the class
 * name. Each subclass carries its data in readonly fields (`consumer`, `messageId`, `timeoutMs`,
 * …), so code never parses the message.
 */
export abstract class ExactlyOnceError extends Error {
  /** Stable identifier of the error kind, e.g. `OUTBOX_PUBLISH_TIMEOUT`. */
  abstract readonly code: string;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}
