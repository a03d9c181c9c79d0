/** @internal DI token of the merged module options. */
export const IDEMPOTENCY_OPTIONS = 'IDEMPOTENCY:MODULE_OPTIONS';
/** @internal DI token of the options as the user gave them (before defaults). */
export const IDEMPOTENCY_RAW_OPTIONS = 'IDEMPOTENCY:RAW_OPTIONS';
/** @internal Metadata key written by `@Idempotent()`. */
export const IDEMPOTENT_METADATA = 'IDEMPOTENCY:IDEMPOTENT';
/** Response header set on every replayed answer. */
export const REPLAYED_HEADER = 'Idempotency-Replayed';
