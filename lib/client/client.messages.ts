/** Messages of the client's errors, in one place. */
export const OPTION_NOT_POSITIVE_INTEGER = (name: string, value: unknown) =>
  `createIdempotentFetch: ${name} must be a positive integer, got ${String(value)}`;

export const OPTION_NOT_NON_NEGATIVE = (name: string, value: unknown) =>
  `createIdempotentFetch: ${name} must be a non-negative finite number of milliseconds, got ${String(value)}`;

export const OPTION_NOT_FUNCTION = (name: string) =>
  `createIdempotentFetch: ${name} must be a function`;

export const HEADER_NAME_INVALID = (value: unknown) =>
  `createIdempotentFetch: headerName must be a non-empty HTTP header name, got ${String(value)}`;

export const NO_FETCH = () =>
  'createIdempotentFetch: no fetch implementation: globalThis.fetch is undefined (Node 18+ or a browser), pass options.fetch';

export const NO_RANDOM_UUID = () =>
  'createIdempotentFetch: cannot generate an Idempotency-Key: globalThis.crypto is unavailable; pass options.key or set the header yourself';

export const STREAM_BODY = (method: string) =>
  `idempotentFetch: a ${method} with a ReadableStream or async-iterable body cannot be sent again on a retry; pass a string, ArrayBuffer, Uint8Array, Blob, URLSearchParams or FormData (or buffer the stream first)`;

export const ATTEMPT_TIMED_OUT = (ms: number) =>
  `idempotentFetch: attempt timed out after ${ms} ms`;

export const BODY_ON_GET = (method: string) =>
  `idempotentFetch: a ${method} request cannot have a body`;
