import { StreamableFile } from '@nestjs/common';

/**
 * Whether a handler's returned value is a stream, told by what it can do rather than by its
 * class, so that every kind is seen: Nest's `StreamableFile`, a Node `Readable` or one from the
 * `readable-stream` package (`pipe` on an event emitter; an rxjs `Observable` has `pipe` only), a web `ReadableStream` (`getReader`), an async iterable
 * (an async generator). None of them can be stored and replayed byte for byte; serialized as
 * JSON they would be stored as a dump of their internals (`{"_readableState":…}`, `{}`).
 * @internal
 */
export function isStreamLike(value: unknown): boolean {
  if (value instanceof StreamableFile) return true;
  if (typeof value !== 'object' || value === null || Buffer.isBuffer(value)) return false;
  const v = value as Record<PropertyKey, unknown>;
  return (
    (typeof v.pipe === 'function' && typeof v.on === 'function') ||
    typeof v.getReader === 'function' ||
    typeof v[Symbol.asyncIterator] === 'function'
  );
}

/** Lets go of a refused stream without reading it (a file handle or a socket is closed). */
export function discardStream(value: unknown): void {
  const v = (value instanceof StreamableFile ? value.getStream() : value) as {
    destroy?: () => unknown;
    cancel?: () => Promise<unknown>;
    return?: () => Promise<unknown>;
  };
  try {
    if (typeof v.destroy === 'function') v.destroy();
    else if (typeof v.cancel === 'function') v.cancel().catch(() => undefined);
    else if (typeof v.return === 'function') v.return().catch(() => undefined);
  } catch {
    // A stream that cannot be closed is left to the garbage collector.
  }
}
