/** @internal Metadata key written by `@ConditionalUpdate()` and `@ConditionalRead()`. */
export const CONDITIONAL_METADATA = 'IDEMPOTENCY:CONDITIONAL';

/** @internal CLS key of the current conditional request's state. */
export const CONDITIONAL_STATE = Symbol.for('nestjs-exactly-once:conditional-state');

/** Most entity tags accepted in one If-Match / If-None-Match header (more is a 400). */
export const MAX_ENTITY_TAGS = 32;
